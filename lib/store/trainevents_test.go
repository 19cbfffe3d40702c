package store

import (
	"testing"
	"time"
)

// A run keeps at most MaxTrainEvents+pruneEvery-1 events, the newest,
// across reopenings of the store; another run's events are untouched.
func TestTrainEventsBounded(t *testing.T) {
	dir := t.TempDir()
	total := MaxTrainEvents + 3*pruneEvery + 7
	next := 0
	for round := range 3 { // three processes, each adding a third
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < total/3+1 && next < total; {
			var batch []RunTrainEvent
			for ; len(batch) < 1000 && n < total/3+1 && next < total; n++ {
				batch = append(batch, RunTrainEvent{RunID: "a", TrainEvent: TrainEvent{Op: "optim_step", Step: int64(next), At: time.Unix(int64(next), 0)}})
				next++
			}
			if round == 0 && n <= 1000 {
				batch = append(batch, RunTrainEvent{RunID: "b", TrainEvent: TrainEvent{Op: "forward", Step: 1, LossSum: 2.5, Weight: 1}})
			}
			if err := s.AddTrainEvents(batch); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.TrainEvents("a")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < MaxTrainEvents || len(a) > MaxTrainEvents+pruneEvery-1 {
		t.Errorf("run a keeps %d events, want %d..%d", len(a), MaxTrainEvents, MaxTrainEvents+pruneEvery-1)
	}
	for i, e := range a {
		if want := int64(total - len(a) + i); e.Step != want {
			t.Fatalf("event %d is step %d, want %d (the newest, in order)", i, e.Step, want)
		}
	}
	b, _ := s.TrainEvents("b")
	if len(b) != 1 || b[0].LossSum != 2.5 {
		t.Errorf("run b's events = %+v, want its one event", b)
	}
}
