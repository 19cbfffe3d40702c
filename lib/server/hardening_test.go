package server

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
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

// fbBody is a JSON forward_backward of the model at seq.
func fbBody(model string, seq int) map[string]any {
	return map[string]any{"model_id": model, "seq_id": seq, "forward_backward_input": jsonForward(sft("ab", "cd"), false)}
}

func optimBody(model string, seq int) map[string]any {
	return map[string]any{"model_id": model, "seq_id": seq, "adam_params": map[string]any{"learning_rate": 1e-2}}
}

// submit sends a request as apiKey and returns the status and the
// future's id (or the body of a refusal).
func (e *env) submit(apiKey, path string, body map[string]any) (int, string) {
	e.t.Helper()
	code, b, _ := e.do("POST", path, body, "X-API-Key", apiKey)
	if code != 200 {
		return code, string(b)
	}
	return code, futureID(e.t, b)
}

// TestOneUsersGapDoesNotStarveOthers: 70 forward_backward requests waiting
// behind a seq_id gap fill one user's queue (64), not everyone's: another
// user's training runs at once.
func TestOneUsersGapDoesNotStarveOthers(t *testing.T) {
	e := newTrainEnv(t, Options{})
	hog := e.newTinyModel(1)
	refused := 0
	for i := range 70 {
		code, b := e.submit(key, "/api/v1/forward_backward", fbBody(hog, 1000+i))
		if code == 429 {
			refused++
			if !strings.Contains(b, "you have 64 training requests queued") {
				t.Errorf("429 of the flooding user: %s", b)
			}
		} else if code != 200 {
			t.Fatalf("flood request %d = %d %s", i, code, b)
		}
	}
	if refused != 6 {
		t.Errorf("%d of 70 gap requests refused, want the 6 beyond the per-user limit", refused)
	}
	other := newTinyModelAs(e, "tml-other-user", 2)
	code, id := e.submit("tml-other-user", "/api/v1/forward_backward", fbBody(other, 1))
	if code != 200 {
		t.Fatalf("another user's forward_backward = %d %s", code, id)
	}
	_, b, _ := e.poll(id, "X-API-Key", "tml-other-user")
	if !strings.Contains(string(b), "loss:sum") {
		t.Errorf("another user's forward_backward: %s", b)
	}
}

func newTinyModelAs(e *trainEnv, apiKey string, seed int64) string {
	e.t.Helper()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(seed), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	tc, err := e.session(apiKey).CreateTrainingClient(context.Background(), models.TinyLlama, lora, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return tc.ModelID()
}

// TestQueuedBodiesAreBudgeted: requests queued behind a gap count against
// --train-memory: one user holds at most half of it, then gets 429.
func TestQueuedBodiesAreBudgeted(t *testing.T) {
	const budget = 1 << 20
	e := newTrainEnv(t, Options{TrainMemory: budget, MaxPendingTrain: 10000})
	model := e.newTinyModel(1)
	d := sft("a", strings.Repeat("b", 78)) // 80 tokens: activations fit the budget
	body := map[string]any{"model_id": model, "forward_backward_input": jsonForward(d, false)}
	n := len(d.ModelInput)
	per := datumBytes([]engine.Datum{{ModelInput: d.ModelInput, LossFnInputs: map[string][]float64{"target_tokens": make([]float64, n), "weights": make([]float64, n)}}})
	admitted := 0
	for i := range 2 * budget / int(per) {
		body["seq_id"] = 1000 + i
		code, b := e.submit(key, "/api/v1/forward_backward", body)
		if code == 429 {
			if !strings.Contains(b, "half of --train-memory") {
				t.Errorf("refusal: %s", b)
			}
			break
		}
		if code != 200 {
			t.Fatalf("request %d = %d %s", i, code, b)
		}
		admitted++
	}
	if got := int64(admitted) * per; got > budget/2 || got < budget/2-per {
		t.Errorf("%d requests of %d bytes admitted (%d bytes), want them to fill half the %d-byte budget", admitted, per, got, budget)
	}
}

// TestIdleTrainersAreWrittenOut: with room for three trainers in
// --train-memory, five models train in turn; the idle ones are written to
// snapshots, memory stays in the budget, and a model brought back continues
// bit-identically to one that never left memory.
func TestIdleTrainersAreWrittenOut(t *testing.T) {
	const budget = 1 << 20 // the tiny model's rank-4 trainer holds 283 KiB
	e := newTrainEnv(t, Options{TrainMemory: budget})
	var ids []string
	for i := range 5 {
		m := e.newTinyModel(int64(10 + i))
		ids = append(ids, m)
		e.result("/api/v1/forward_backward", fbBody(m, 1))
		e.result("/api/v1/optim_step", optimBody(m, 2))
		if n := e.srv.trainers.residentBytes; n > budget {
			t.Fatalf("after %d models %d bytes of trainers in memory, budget %d", i+1, n, budget)
		}
	}
	if _, err := os.Stat(e.srv.trainers.snapshotDir(ids[0])); err != nil {
		t.Fatalf("the least recently used trainer was not written out: %v", err)
	}
	for _, m := range ids[:1] {
		e.result("/api/v1/forward_backward", fbBody(m, 3))
		e.result("/api/v1/optim_step", optimBody(m, 4))
	}
	got := e.result("/api/v1/save_weights", map[string]any{"model_id": ids[0], "seq_id": 5, "path": "after", "type": "save_weights"})

	ref := newTrainEnv(t, Options{})
	m := ref.newTinyModel(10)
	for seq := 1; seq <= 4; seq += 2 {
		ref.result("/api/v1/forward_backward", fbBody(m, seq))
		ref.result("/api/v1/optim_step", optimBody(m, seq+1))
	}
	want := ref.result("/api/v1/save_weights", map[string]any{"model_id": m, "seq_id": 5, "path": "after", "type": "save_weights"})
	for _, f := range []string{peft.WeightsFile, engine.OptimizerFile} {
		if !bytes.Equal(e.file(savedPath(t, got), f), ref.file(savedPath(t, want), f)) {
			t.Errorf("%s of a model written out and restored differs from one kept in memory", f)
		}
	}
}

// TestTrainersPerUserAreCapped: one user training ten models keeps at most
// maxResidentPerUser of them in memory.
func TestTrainersPerUserAreCapped(t *testing.T) {
	e := newTrainEnv(t, Options{})
	for i := range maxResidentPerUser + 2 {
		m := e.newTinyModel(int64(20 + i))
		e.result("/api/v1/forward_backward", fbBody(m, 1))
	}
	if n := len(e.srv.trainers.resident); n != maxResidentPerUser {
		t.Errorf("%d trainers in memory for one user, want %d", n, maxResidentPerUser)
	}
}

func savedPath(t *testing.T, b []byte) string {
	t.Helper()
	var r struct{ Path string }
	if err := json.Unmarshal(b, &r); err != nil || r.Path == "" {
		t.Fatalf("save result %s", b)
	}
	return r.Path
}

// TestStopWithTrainingInFlight: a forward_backward and an optim_step are
// submitted, not collected, when the server stops (the pass waits for the
// CPU slot, so both are still queued). Drained (issue 22): after the
// restart both futures answer with the results an uninterrupted run gets.
// Halted (grace over, issue 18): neither ran, both answer 410, and
// resubmitting them under the same seq_ids works. Either way the model
// then continues bit-identically to a run that never stopped.
func TestStopWithTrainingInFlight(t *testing.T) {
	ref := newTrainEnv(t, Options{})
	rm := ref.newTinyModel(7)
	wantFB := ref.result("/api/v1/forward_backward", fbBody(rm, 1))
	wantOpt := ref.result("/api/v1/optim_step", optimBody(rm, 2))
	ref.result("/api/v1/forward_backward", fbBody(rm, 3))
	ref.result("/api/v1/optim_step", optimBody(rm, 4))
	want := savedPath(t, ref.result("/api/v1/save_weights", map[string]any{"model_id": rm, "seq_id": 5, "path": "after", "type": "save_weights"}))

	for _, halt := range []bool{false, true} {
		t.Run(map[bool]string{false: "drained", true: "halted"}[halt], func(t *testing.T) {
			grace := time.Minute
			if halt {
				grace = -1 // at once (tinker serve --shutdown-grace 0)
			}
			e := newTrainEnv(t, Options{KeepTrainers: true, ShutdownGrace: grace})
			model := e.newTinyModel(7)
			ts := e.srv.trainers
			ts.cpu <- struct{}{} // a pass of another model holds the CPU slot
			_, fb := e.submit(key, "/api/v1/forward_backward", fbBody(model, 1))
			_, opt := e.submit(key, "/api/v1/optim_step", optimBody(model, 2))
			closed := make(chan error)
			go func() { closed <- e.srv.Close() }()
			for waited := time.Duration(0); !isClosed(ts.stop) || (halt && !isClosed(ts.halt)); waited += time.Millisecond {
				if waited > 10*time.Second { // the default grace is 30s
					t.Fatal("a negative ShutdownGrace did not halt at once")
				}
				time.Sleep(time.Millisecond)
			}
			<-ts.cpu
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			pool := &engine.Pool{}
			s2, err := Open(Options{DataDir: e.dir, Now: e.clk.Now, SweepInterval: -1, Sampler: EngineSampler(pool), Engine: pool,
				FutureDelay: time.Millisecond, PollHold: 500 * time.Millisecond, KeepTrainers: true})
			if err != nil {
				t.Fatal(err)
			}
			e.restart(s2)
			if !halt {
				for _, c := range []struct {
					id   string
					want []byte
				}{{fb, wantFB}, {opt, wantOpt}} {
					if _, got, _ := e.poll(c.id); !bytes.Equal(got, c.want) {
						t.Errorf("future after the restart: %s, uninterrupted %s", got, c.want)
					}
				}
			} else {
				for _, id := range []string{fb, opt} {
					if code, b, _ := e.do("POST", "/api/v1/retrieve_future", map[string]any{"request_id": id}); code != 410 || !strings.Contains(string(b), "stopped before this operation ran") {
						t.Errorf("future of a halted operation = %d %s, want 410 saying it did not run", code, b)
					}
				}
				if got := e.result("/api/v1/forward_backward", fbBody(model, 1)); !bytes.Equal(got, wantFB) {
					t.Errorf("resubmitted forward_backward: %s, uninterrupted %s", got, wantFB)
				}
				e.result("/api/v1/optim_step", optimBody(model, 2))
			}
			e.result("/api/v1/forward_backward", fbBody(model, 3))
			e.result("/api/v1/optim_step", optimBody(model, 4))
			got := savedPath(t, e.result("/api/v1/save_weights", map[string]any{"model_id": model, "seq_id": 5, "path": "after", "type": "save_weights"}))
			for _, f := range []string{peft.WeightsFile, engine.OptimizerFile} {
				if !bytes.Equal(e.file(got, f), ref.file(want, f)) {
					t.Errorf("%s after the stop differs from the run that never stopped", f)
				}
			}
		})
	}
}

// TestBusyTrainersAreNotEvicted: with room for one trainer, a second
// model's operation while the first has an operation queued (waiting for
// a seq_id) answers 429 instead of taking the busy trainer's memory; once
// the first is idle, the same request sent again (same seq_id, as clients
// retry a 429) trains.
func TestBusyTrainersAreNotEvicted(t *testing.T) {
	e := newTrainEnv(t, Options{TrainMemory: 400 << 10, SeqGapTimeout: 200 * time.Millisecond})
	a, b := e.newTinyModel(1), e.newTinyModel(2)
	e.result("/api/v1/forward_backward", fbBody(a, 1))
	code, waiting := e.submit(key, "/api/v1/optim_step", optimBody(a, 3)) // seq 2 never comes
	if code != 200 {
		t.Fatalf("optim_step behind a gap = %d %s", code, waiting)
	}
	if code, body := e.submit(key, "/api/v1/forward_backward", fbBody(b, 1)); code != 429 || !strings.Contains(body, "training memory is full") {
		t.Errorf("second model while the first is busy = %d %s, want 429", code, body)
	}
	e.poll(waiting)
	if got := e.result("/api/v1/forward_backward", fbBody(b, 1)); !strings.Contains(string(got), "loss:sum") {
		t.Errorf("second model once the first is idle: %s", got)
	}
	if _, err := os.Stat(e.srv.trainers.snapshotDir(a)); err != nil {
		t.Errorf("the idle first trainer was not written out: %v", err)
	}
}

// TestIdleSnapshotsCappedPerUser (issue 31, item 17): one user's idle
// trainers written out to disk are held to SnapshotBytesPerUser; past it
// no further one is written, and the user is told why, naming the cap.
func TestIdleSnapshotsCappedPerUser(t *testing.T) {
	e := newTrainEnv(t, Options{})
	for i := range maxResidentPerUser + 1 {
		m := e.newTinyModel(int64(40 + i))
		e.result("/api/v1/forward_backward", fbBody(m, 1))
	}
	one := e.srv.trainers.snapshotUse(OwnerURN(key))
	if one <= 0 {
		t.Fatalf("no idle trainer was written out (%d bytes counted)", one)
	}
	e.srv.trainers.snapCap = one // room for exactly the one written
	m := e.newTinyModel(99)
	code, b, _ := e.do("POST", "/api/v1/forward_backward", fbBody(m, 1))
	if code == 200 {
		var sub struct {
			RequestID string `json:"request_id"`
		}
		json.Unmarshal(b, &sub)
		_, b, _ = e.poll(sub.RequestID)
	}
	if !strings.Contains(string(b), "written to disk") || !strings.Contains(string(b), "tinker serve --help") {
		t.Errorf("past the snapshot cap: %d %.300s, want a refusal naming the cap", code, b)
	}
	if got := e.srv.trainers.snapshotUse(OwnerURN(key)); got != one {
		t.Errorf("snapshots grew to %d bytes past the cap of %d", got, one)
	}
}
