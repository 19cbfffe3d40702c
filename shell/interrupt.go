package shell

import (
	"os"
	"os/signal"
	"sync"
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
