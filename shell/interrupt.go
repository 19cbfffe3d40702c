package shell

import (
	"os"
	"os/signal"
	"sync"
)

// interrupter routes Ctrl-C to the evaluation in progress. Nothing is
// cancelled between evaluations: a Ctrl-C then is the line editor's.
type interrupter struct {
	mu     sync.Mutex
	cancel func() // of the running evaluation; nil between evaluations
	hit    bool
}

// begin marks an evaluation as running; cancel stops it.
func (i *interrupter) begin(cancel func()) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cancel, i.hit = cancel, false
}

// end marks the evaluation as finished and reports whether it was interrupted.
func (i *interrupter) end() (interrupted bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.cancel = nil
	return i.hit
}

// interrupt cancels the running evaluation, if any.
func (i *interrupter) interrupt() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cancel != nil {
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
