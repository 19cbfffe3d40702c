package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// The training events a watcher was told are recorded, so a restarted
// server gives them back, in order, to the run's owner and to no one else.
func TestTrainHistoryOutlivesRestart(t *testing.T) {
	var mu sync.Mutex
	var told []TrainEvent
	e := newTrainEnv(t, Options{OnTrain: func(ev TrainEvent) { mu.Lock(); told = append(told, ev); mu.Unlock() }})
	ctx := context.Background()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(5)), TrainAttn: true, TrainMLP: true}
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := []tinkerapi.Datum{sft("ab", "cd"), sft("x", "yz")}
	for range 2 {
		e.step(tc, data, 1e-2)
	}
	if _, err := tc.Forward(ctx, tinkerapi.ForwardBackwardInput{Data: data, LossFn: "cross_entropy"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	want := append([]TrainEvent(nil), told...)
	mu.Unlock()
	if len(want) != 5 {
		t.Fatalf("the watcher was told %d events, want 5 (2 x forward_backward+optim_step, 1 forward)", len(want))
	}

	// Before the restart, the first server still holds them unwritten and
	// gives them back all the same.
	if early := e.srv.TrainHistory(tc.ModelID(), OwnerURN(key)); len(early) != len(want) {
		t.Errorf("history before the restart has %d events, want %d", len(early), len(want))
	}
	e.srv.Close()
	pool := &engine.Pool{}
	s2, err := Open(Options{DataDir: e.dir, Now: e.clk.Now, SweepInterval: -1, Sampler: EngineSampler(pool), Engine: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	owner := OwnerURN(key)
	got := s2.TrainHistory(tc.ModelID(), owner)
	if len(got) != len(want) {
		t.Fatalf("history after restart has %d events, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.Op != w.Op || g.Step != w.Step || g.LossSum != w.LossSum || g.Weight != w.Weight || g.LearningRate != w.LearningRate ||
			g.GradNorm != w.GradNorm || !g.At.Equal(w.At.Truncate(time.Microsecond)) || g.Owner != owner || g.RunID != tc.ModelID() {
			t.Errorf("event %d after restart = %+v, want %+v", i, g, w)
		}
	}
	if other := s2.TrainHistory(tc.ModelID(), OwnerURN("tml-someone-else")); other != nil {
		t.Errorf("another user reads the run's training events: %+v", other)
	}
	if none := s2.TrainHistory("no-such-run", owner); none != nil {
		t.Errorf("an unknown run has events: %+v", none)
	}
}
