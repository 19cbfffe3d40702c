package download

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// rateGuard cancels an attempt whose average rate over a window falls
// below a minimum. The idle timer alone never fires for a server that
// sends a byte now and then.
type rateGuard struct {
	got    atomic.Int64 // bytes received so far
	min    int64        // bytes per second
	window time.Duration
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	timer  *time.Timer
	mark   int64 // got when the current window began
	paused bool
}

func newRateGuard(min int64, window time.Duration, cancel context.CancelCauseFunc) *rateGuard {
	g := &rateGuard{min: min, window: window, cancel: cancel}
	g.timer = time.AfterFunc(window, g.check)
	return g
}

func (g *rateGuard) add(n int64) { g.got.Add(n) }

func (g *rateGuard) check() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused {
		return
	}
	got := g.got.Load()
	want := int64(float64(g.min) * g.window.Seconds())
	if got-g.mark < want {
		g.cancel(fmt.Errorf("%w: %d bytes in the last %v, below the minimum of %d bytes/s; check the network and try again",
			errTooSlow, got-g.mark, g.window, g.min))
		return
	}
	g.mark = got
	g.timer.Reset(g.window)
}

// pause stops the clock (a backoff between resumes is not slowness).
func (g *rateGuard) pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = true
	g.timer.Stop()
}

// resume starts a fresh window.
func (g *rateGuard) resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.paused = false
	g.mark = g.got.Load()
	g.timer.Reset(g.window)
}
