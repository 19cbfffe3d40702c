package server

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// The training endpoints under hostile input and faults (issue 18).

// newTinyModel creates a tiny-llama model through the client and returns
// its id.
func (e *trainEnv) newTinyModel(seed int64) string {
	e.t.Helper()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(seed), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	tc, err := e.sess.CreateTrainingClient(context.Background(), models.TinyLlama, lora, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return tc.ModelID()
}

// result submits a request and returns its future's final answer.
func (e *env) result(path string, body map[string]any) []byte {
	e.t.Helper()
	code, b, _ := e.do("POST", path, body)
	if code != 200 {
		e.t.Fatalf("POST %s = %d %s", path, code, b)
	}
	_, b, _ = e.poll(futureID(e.t, b))
	return b
}

// TestNonFiniteResultsFailClearly: loss weights of 3e38 overflow the
// elementwise loss; the future then fails with a user error naming the
// value and saying to load the last saved state, never an empty 200; the
// same for the optim_step and forward after it, in JSON.
func TestNonFiniteResultsFailClearly(t *testing.T) {
	e := newTrainEnv(t, Options{})
	model := e.newTinyModel(3)
	fb := jsonForward(sft("ab", "cd"), false)
	inputs := fb["data"].([]any)[0].(map[string]any)["loss_fn_inputs"].(map[string]any)
	w := inputs["weights"].(map[string]any)["data"].([]float32)
	for i := range w {
		w[i] = 3e38
	}
	isUserFailure := func(what string, b []byte) {
		t.Helper()
		var f struct{ Error, Category string }
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: answer is not JSON (%v): %q", what, err, b)
		}
		if f.Category != "user" || !strings.Contains(f.Error, "not a finite number") || !strings.Contains(f.Error, "load_state") {
			t.Errorf("%s: %s, want a user error naming the non-finite value and load_state", what, b)
		}
	}
	isUserFailure("forward_backward", e.result("/api/v1/forward_backward", map[string]any{"model_id": model, "seq_id": 1, "forward_backward_input": fb}))
	b := e.result("/api/v1/optim_step", map[string]any{"model_id": model, "seq_id": 2, "adam_params": map[string]any{"learning_rate": 1e-3}})
	if len(b) == 0 || !json.Valid(b) {
		t.Fatalf("optim_step answered %q", b)
	}
	// The gradients of that call were kept: whether the step itself is
	// reported or refused, the forward after it must say what overflowed.
	if strings.Contains(string(b), `"error"`) {
		isUserFailure("optim_step", b)
	}
	fwd := jsonForward(sft("ab", "cd"), false)
	b = e.result("/api/v1/forward", map[string]any{"model_id": model, "seq_id": 3, "forward_input": fwd})
	if len(b) == 0 || !json.Valid(b) {
		t.Fatalf("forward after the overflow answered %q", b)
	}
}

// TestSeqIDExhausted: after seq_id 2^63-1 a request without a seq_id is
// refused with a message saying what to do, not given a negative id.
func TestSeqIDExhausted(t *testing.T) {
	e := newTrainEnv(t, Options{SeqGapTimeout: 100 * time.Millisecond})
	model := e.newTinyModel(4)
	adam := map[string]any{"learning_rate": 1e-3}
	code, b, _ := e.do("POST", "/api/v1/optim_step", map[string]any{"model_id": model, "seq_id": math.MaxInt64, "adam_params": adam})
	if code != 200 {
		t.Fatalf("optim_step with the last seq_id = %d %s", code, b)
	}
	code, b, _ = e.do("POST", "/api/v1/optim_step", map[string]any{"model_id": model, "adam_params": adam})
	if code != 400 || strings.Contains(string(b), "-9223372036854775808") || !strings.Contains(string(b), "new model") {
		t.Errorf("optim_step after the last seq_id = %d %s, want 400 saying to continue in a new model", code, b)
	}
}

// TestSnapshotTempDirsArePruned: a kill while a snapshot was written leaves
// DataDir/trainers/.<run>.snapshot.tmp-*; the next start (or sweep)
// removes it, and leaves complete snapshots alone.
func TestSnapshotTempDirsArePruned(t *testing.T) {
	dir := t.TempDir()
	trainersDir := filepath.Join(dir, "trainers")
	tmp := filepath.Join(trainersDir, ".sess:train:0.snapshot.tmp-123456")
	keep := filepath.Join(trainersDir, "sess:train:1.snapshot")
	for _, d := range []string{tmp, keep} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "adapter_model.safetensors"), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour) // the kill happened a while ago
	os.Chtimes(tmp, old, old)
	newEnvIn(t, dir, "", Options{KeepTrainers: true})
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary snapshot directory survived the restart: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a complete snapshot was pruned: %v", err)
	}
}
