package server

import (
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/store"
)

// trainLogEvery is how long a training event may wait in memory before it
// is written: events go to the store in batches, one sync to disk per
// batch, so recording them costs a training step next to nothing.
const trainLogEvery = time.Second

// trainLog records training events in the store for TrainHistory. Events
// not yet written are held in pending, which TrainHistory reads too, so
// an event is in the history from the moment it is recorded.
type trainLog struct {
	st   *store.Store
	logf func(string, ...any)

	// flushMu is held across a write and across a read of the history, so
	// a reader never sees an event both written and still pending.
	flushMu sync.Mutex
	mu      sync.Mutex // guards pending; add takes only this
	pending []store.RunTrainEvent
	stop    chan struct{}
	done    chan struct{}
}

func newTrainLog(st *store.Store, logf func(string, ...any)) *trainLog {
	l := &trainLog{st: st, logf: logf, stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop()
	return l
}

// add holds ev for the next write.
func (l *trainLog) add(ev store.RunTrainEvent) {
	l.mu.Lock()
	l.pending = append(l.pending, ev)
	l.mu.Unlock()
}

// history returns runID's events, written and pending, oldest first.
func (l *trainLog) history(runID string) ([]store.TrainEvent, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	out, err := l.st.TrainEvents(runID)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.pending {
		if e.RunID == runID {
			out = append(out, e.TrainEvent)
		}
	}
	return out, nil
}

func (l *trainLog) loop() {
	defer close(l.done)
	t := time.NewTicker(trainLogEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			l.flush()
			return
		case <-t.C:
			l.flush()
		}
	}
}

// flush writes the pending events. They stay pending (and visible) until
// written, and a failed write keeps them for the next try, up to a bound.
func (l *trainLog) flush() {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	batch := l.pending
	l.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := l.st.AddTrainEvents(batch)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil || len(l.pending) > store.MaxTrainEvents {
		l.pending = append([]store.RunTrainEvent(nil), l.pending[len(batch):]...)
	}
	if err != nil {
		l.logf("training curves: %v", err)
	}
}

// close writes what is pending and stops the writer.
func (l *trainLog) close() {
	close(l.stop)
	<-l.done
}
