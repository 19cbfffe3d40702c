package tinkerapi

import (
	"context"
	"sync"
)

// Future is an operation the server has accepted and is running; Wait
// fetches its result. Submitting several operations before waiting on any
// lets the server run them back to back (a step's forward_backward and
// optim_step, say). It is safe for concurrent use.
type Future[T any] struct {
	mu    sync.Mutex
	done  bool
	val   T
	err   error
	fetch func(ctx context.Context) (T, error)
}

func newFuture[T any](fetch func(ctx context.Context) (T, error)) *Future[T] {
	return &Future[T]{fetch: fetch}
}

// Wait blocks until the result is in or ctx ends. The result (or the
// operation's error) is kept, so later calls return it at once. A Wait
// cut short by ctx can be called again; the operation keeps running,
// except on a server that takes cancel_future (tinker serve), which is
// told the caller stopped waiting and stops it (Client.Await).
func (f *Future[T]) Wait(ctx context.Context) (T, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return f.val, f.err
	}
	v, err := f.fetch(ctx)
	if err != nil && ctx.Err() != nil {
		return v, err
	}
	f.done, f.val, f.err = true, v, err
	return v, err
}
