package server

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestTrainersKeptAcrossCleanRestart: a server with KeepTrainers that is
// closed between forward_backward and optim_step continues the model after
// a restart with the same bits as a run that never stopped; the snapshot
// is gone once restored.
func TestTrainersKeptAcrossCleanRestart(t *testing.T) {
	e := newTrainEnv(t, Options{KeepTrainers: true})
	ctx := context.Background()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(5)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	data := []tinkerapi.Datum{sft("ab", "cd"), sft("hello", " world")}
	adam := tinkerapi.DefaultAdamParams()
	adam.LearningRate = 1e-2

	ref, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		e.step(ref, data, adam.LearningRate)
	}
	want, err := ref.SaveState(ctx, "ref", nil)
	if err != nil {
		t.Fatal(err)
	}

	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.step(tc, data, adam.LearningRate)
	}
	if _, err := tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: data, LossFn: "cross_entropy"}); err != nil {
		t.Fatal(err)
	}
	model := tc.ModelID()
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	pool := &engine.Pool{}
	s2, err := Open(Options{DataDir: e.dir, Now: e.clk.Now, SweepInterval: -1, Sampler: EngineSampler(pool), Engine: pool,
		FutureDelay: time.Millisecond, PollHold: 500 * time.Millisecond, KeepTrainers: true})
	if err != nil {
		t.Fatal(err)
	}
	e.restart(s2)
	snap := s2.trainers.snapshotDir(model)
	if _, err := os.Stat(snap); err != nil {
		t.Fatalf("no snapshot after a clean stop: %v", err)
	}
	// The client numbered its requests; the restarted server's queue goes
	// on from where it stood (seq_ids 1-5 ran: create_model is 0).
	if m := s2.trainers.model(model); m.done != 5 || !m.snapshot {
		t.Fatalf("restarted queue: done %d, snapshot %v; want 5, true", m.done, m.snapshot)
	}
	run := func(path string, body map[string]any) []byte {
		t.Helper()
		code, b, _ := e.do("POST", path, body)
		if code != 200 {
			t.Fatalf("%s = %d %s", path, code, b)
		}
		_, b, _ = e.poll(futureID(t, b))
		if bytes.Contains(b, []byte(`"error"`)) {
			t.Fatalf("%s failed: %s", path, b)
		}
		return b
	}
	run("/api/v1/optim_step", map[string]any{"model_id": model, "seq_id": 6, "adam_params": adam})
	fb := map[string]any{"model_id": model, "seq_id": 7, "forward_backward_input": map[string]any{
		"data": []any{jsonForward(data[0], false)["data"].([]any)[0], jsonForward(data[1], false)["data"].([]any)[0]}, "loss_fn": "cross_entropy"}}
	run("/api/v1/forward_backward", fb)
	run("/api/v1/optim_step", map[string]any{"model_id": model, "seq_id": 8, "adam_params": adam})
	b := run("/api/v1/save_weights", map[string]any{"model_id": model, "seq_id": 9, "path": "after", "type": "save_weights"})
	if !strings.Contains(string(b), "/weights/after") {
		t.Fatalf("save_weights result %s", b)
	}
	got := "tinker://" + model + "/weights/after"
	for _, f := range []string{peft.WeightsFile, engine.OptimizerFile} {
		if !bytes.Equal(e.file(want, f), e.file(got, f)) {
			t.Errorf("%s after a clean restart differs from the run that never stopped", f)
		}
	}
	if _, err := os.Stat(snap); !os.IsNotExist(err) {
		t.Errorf("the snapshot outlived its restore: %v", err)
	}
}
