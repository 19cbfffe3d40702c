package builtins

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The status line adds its own elapsed time; the future's state must not
// bring a second, frozen one ("⠇ Sample: running 2s 2s").
func TestStatusLineShowsOneDuration(t *testing.T) {
	var buf lockedBuffer
	e := &Env{Notices: &buf, NoticesTTY: true, Width: 80}
	e.showState(tinkerapi.State{Kind: "Sample", Status: tinkerapi.StatusRunning, Elapsed: 2 * time.Second})
	// The line is drawn by the status's own goroutine: wait for it.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(buf.String(), "Sample") && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	e.clearStatus()
	out := buf.String()
	if !strings.Contains(out, "Sample: running") || strings.Contains(out, "2s") {
		t.Errorf("status line %q: want the state's label without its stale elapsed time", out)
	}
}
