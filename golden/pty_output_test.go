package golden

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestPromptSlowReader prints 3,000 lines at the prompt to a terminal that
// is read slowly, as over ssh: every line must arrive, with no write error,
// and the prompt must come back. Standard output on a terminal shares its
// open file description with standard input, so a keyboard reader that
// made descriptor 0 non-blocking made stdout drop output (EAGAIN).
func TestPromptSlowReader(t *testing.T) {
	home := t.TempDir()
	cmd := tinkerCmd(t, home)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatalf("start pty: %v", err)
	}
	defer f.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 256)
		for {
			n, err := f.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
			time.Sleep(time.Millisecond) // a slow terminal
		}
	}()
	time.Sleep(200 * time.Millisecond)
	f.WriteString(`print("abcdefghi\n" * 2999 + "abcdefghi")` + "\r")
	f.WriteString(`print("end" + "ofoutput")` + "\r")
	f.WriteString("\x04")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("tinker did not exit after Ctrl-D")
	}
	<-read // the reader drains the terminal, then reads EIO
	got := out.String()
	if n := strings.Count(got, "abcdefghi\r\n"); n != 3000 {
		t.Errorf("%d of 3000 lines arrived; output ends:\n%q", n, got[max(0, len(got)-500):])
	}
	if !strings.Contains(got, "endofoutput") {
		t.Errorf("the statement after the long output did not run")
	}
	if strings.Contains(got, "temporarily unavailable") {
		t.Errorf("a write failed: %q", got[max(0, len(got)-300):])
	}
	if err != nil {
		t.Errorf("tinker exited with %v, want status 0", err)
	}
}

// TestPromptExitAfterValue types a statement and Ctrl-D at once, many
// times over: the session must end every time, whatever the timing.
func TestPromptExitAfterValue(t *testing.T) {
	steps := []step{{">>> ", "1+1\r\x04"}}
	for i := 0; i < 20; i++ {
		out, err := react(t, tinkerCmd(t, t.TempDir()), steps)
		if err != nil {
			t.Fatalf("run %d: exit %v; output:\n%q", i, err, out)
		}
		if !strings.Contains(out, "\r\n2\r\n") {
			t.Fatalf("run %d: no value shown:\n%q", i, out)
		}
	}
}
