package batch

import (
	"context"
	"sync"
)

// limiter bounds the rows in flight. The client already waits out each
// 429 and resubmits; the limiter additionally halves the bound when the
// server pushes back, at most once between two completed rows (many rows
// stalled by the same overload count once), and raises it by one after a
// bound's worth of rows completes without push-back.
type limiter struct {
	mu       sync.Mutex
	cond     *sync.Cond
	limit    int
	max      int
	inflight int
	streak   int  // rows completed since the last push-back
	cutArmed bool // a row completed since the last cut
	cuts     int
	lowest   int
}

func newLimiter(n int) *limiter {
	l := &limiter{limit: n, max: n, cutArmed: true, lowest: n}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// acquire waits for a free slot; it fails only when ctx is done.
func (l *limiter) acquire(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.inflight >= l.limit {
		if err := ctx.Err(); err != nil {
			return err
		}
		l.cond.Wait()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.inflight++
	return nil
}

// release frees a slot; ok says the row completed.
func (l *limiter) release(ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inflight--
	if ok {
		l.cutArmed = true
		if l.streak++; l.streak >= l.limit && l.limit < l.max {
			l.limit++
			l.streak = 0
		}
	}
	l.cond.Broadcast()
}

// pushBack records a 429 (or billing pause) from the server.
func (l *limiter) pushBack() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streak = 0
	if !l.cutArmed || l.limit == 1 {
		return
	}
	l.limit = max(1, l.limit/2)
	l.lowest = min(l.lowest, l.limit)
	l.cutArmed = false
	l.cuts++
}

// stats returns how often the bound was cut and its lowest value.
func (l *limiter) stats() (cuts, lowest int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cuts, l.lowest
}
