package shell

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"time"
)

// interrupter routes Ctrl-C to the evaluation in progress. Nothing is
// cancelled between evaluations: a Ctrl-C then is the line editor's.
// The first Ctrl-C cancels the evaluation, which may still finish what
// it sent (a training step and its save); the second stops that too.
type interrupter struct {
	mu     sync.Mutex
	cancel func() // of the running evaluation; nil between evaluations
	hard   func() // gives up the evaluation's waits after a first cancel
	hit    bool
}

// begin marks an evaluation as running; cancel stops it, hard stops what
// it still finishes after that.
func (i *interrupter) begin(cancel, hard func()) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cancel, i.hard, i.hit = cancel, hard, false
}

// end marks the evaluation as finished and reports whether it was interrupted.
func (i *interrupter) end() (interrupted bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cancel, i.hard = nil, nil
	return i.hit
}

// interrupt cancels the running evaluation, if any; a second call stops
// it hard.
func (i *interrupter) interrupt() {
	i.mu.Lock()
	defer i.mu.Unlock()
	switch {
	case i.cancel == nil:
	case i.hit:
		i.hard()
	default:
		i.hit = true
		i.cancel()
	}
}

// onSignal calls f for every one of sigs (SIGINT when none are named) until
// stop is called. While it is in force those signals never terminate the
// process.
func onSignal(f func(), which ...os.Signal) (stop func()) {
	if len(which) == 0 {
		which = []os.Signal{os.Interrupt}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, which...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				f()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// armDelay is how long an evaluation that never waits runs before its
// signal handler is installed anyway.
const armDelay = 5 * time.Millisecond

// lazily defers install (onSignal's handler) until it is needed:
// signal.Notify starts two threads, a cost `tinker -c '1+1'` would pay
// for an evaluation over in a millisecond. arm installs the handler (once);
// it is called after armDelay, and by the context from armingContext the
// first time anything waits on it or asks whether it is done, so the
// handler is in force before an evaluation first blocks (a request, a
// download, a training step) and once a long computation is under way.
// Until then the signals keep their default action, as they have in the
// moments before an evaluation starts. stop releases what was installed;
// nothing is installed after it.
func lazily(install func() (release func())) (arm func(), stop func()) {
	var (
		mu      sync.Mutex
		stopped bool
		release func()
	)
	arm = func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped && release == nil {
			release = install()
		}
	}
	timer := time.AfterFunc(armDelay, arm)
	stop = func() {
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if release != nil {
			release()
		}
	}
	return arm, stop
}

// armingContext calls arm whenever its Done or Err is asked for: whoever
// asks may wait, and a wait must be interruptible.
type armingContext struct {
	context.Context
	arm func()
}

func (c armingContext) Done() <-chan struct{} {
	c.arm()
	return c.Context.Done()
}

func (c armingContext) Err() error {
	c.arm()
	return c.Context.Err()
}
