package server

import (
	"bytes"
	"context"
	"fmt"
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

// trainEnv is a server with the real engine and a session of the
// repository's own client, which speaks the protobuf bodies the SDK sends.
type trainEnv struct {
	*env
	sess *tinkerapi.Session
}

func newTrainEnv(t *testing.T, opts Options) *trainEnv {
	pool := &engine.Pool{}
	opts.Sampler, opts.Engine = EngineSampler(pool), pool
	if opts.FutureDelay == 0 {
		opts.FutureDelay = time.Millisecond
	}
	if opts.PollHold == 0 {
		opts.PollHold = 500 * time.Millisecond
	}
	e := newEnv(t, "", opts)
	return &trainEnv{env: e, sess: e.session(key)}
}

func (e *env) session(apiKey string) *tinkerapi.Session {
	e.t.Helper()
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: e.url, APIKey: apiKey})
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := c.CreateSession(context.Background(), tinkerapi.SessionOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}

// sft is a supervised datum over prompt+completion in the tiny byte
// vocabulary: only the completion's tokens carry weight.
func sft(prompt, completion string) tinkerapi.Datum {
	seq := []int{models.TinyBOS}
	for _, b := range []byte(prompt + completion) {
		seq = append(seq, int(b))
	}
	targets := make([]int64, len(seq)-1)
	weights := make([]float32, len(seq)-1)
	for i := range targets {
		targets[i] = int64(seq[i+1])
		if i+1 > len(prompt) {
			weights[i] = 1
		}
	}
	return tinkerapi.Datum{ModelInput: seq[:len(seq)-1],
		LossFnInputs: map[string]tinkerapi.Tensor{"target_tokens": tinkerapi.Int64s(targets), "weights": tinkerapi.Float32s(weights)}}
}

func (e *trainEnv) step(tc *tinkerapi.TrainingClient, data []tinkerapi.Datum, lr float64) float64 {
	e.t.Helper()
	ctx := context.Background()
	out, err := tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: data, LossFn: "cross_entropy"})
	if err != nil {
		e.t.Fatal(err)
	}
	adam := tinkerapi.DefaultAdamParams()
	adam.LearningRate = lr
	res, err := tc.OptimStep(ctx, adam)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.Metrics["unclipped_grad_l2:mean"] <= 0 {
		e.t.Errorf("optim_step metrics %v", res.Metrics)
	}
	loss, ok := out.Loss()
	if !ok || len(out.LossFnOutputs) != len(data) {
		e.t.Fatalf("forward_backward output: %+v", out)
	}
	return loss
}

// file reads one file of the checkpoint at a tinker path.
func (e *env) file(path, name string) []byte {
	e.t.Helper()
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(e.srv.checkpointDir(p.RunID, p.Kind, p.Name), name))
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// TestTrainMemoriseThenSample: over HTTP, the tiny model learns a short
// completion (the loss falls more than tenfold), and greedy sampling of
// the saved sampler checkpoint, and of an ephemeral sampler, reproduces it.
func TestTrainMemoriseThenSample(t *testing.T) {
	e := newTrainEnv(t, Options{})
	ctx := context.Background()
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 8, Seed: new(int64(3)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	prompt, completion := "Q: sky?\nA:", " blue"
	data := []tinkerapi.Datum{sft(prompt, completion)}
	first := e.step(tc, data, 3e-3)
	last := first
	for range 40 { // 82 seq_ids, the save takes 83
		last = e.step(tc, data, 3e-3)
	}
	t.Logf("loss %.4g -> %.4g", first, last)
	if !(last < first/10) {
		t.Fatalf("loss %.4g -> %.4g: did not fall tenfold", first, last)
	}
	path, err := tc.SaveWeightsForSampler(ctx, "memorised", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{}
	for _, b := range []byte(completion) {
		want = append(want, int(b))
	}
	greedy := func(sid string) []int {
		toks := []int{models.TinyBOS}
		for _, b := range []byte(prompt) {
			toks = append(toks, int(b))
		}
		req := tinkerapi.NewSampleRequest(toks)
		req.MaxTokens, req.Temperature = len(want), 0
		res, err := e.sess.Sample(ctx, sid, req)
		if err != nil {
			t.Fatal(err)
		}
		return res.Sequences[0].Tokens
	}
	sid, err := e.sess.CreateSamplingSession(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	if got := greedy(sid); string(bytesOf(got)) != completion {
		t.Errorf("sampler checkpoint %s generates %q, want %q", path, bytesOf(got), completion)
	}
	// An ephemeral sampler (no path) samples the trained weights too.
	code, b, _ := e.do("POST", "/api/v1/save_weights_for_sampler", map[string]any{"model_id": tc.ModelID(), "seq_id": 84, "sampling_session_seq_id": 100})
	if code != 200 {
		t.Fatalf("ephemeral save = %d %s", code, b)
	}
	e.poll(futureID(t, b))
	if got := greedy(e.sess.ID() + ":sample:100"); string(bytesOf(got)) != completion {
		t.Errorf("ephemeral sampler generates %q, want %q", bytesOf(got), completion)
	}
	base, err := e.sess.CreateSamplingSession(ctx, models.TinyLlama, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := greedy(base); string(bytesOf(got)) == completion {
		t.Errorf("the base model already generates %q: the test proves nothing", completion)
	}
}

func bytesOf(toks []int) []byte {
	b := make([]byte, len(toks))
	for i, t := range toks {
		b[i] = byte(t)
	}
	return b
}

// TestTrainResumeBitExact: save with the optimizer after N steps and go on
// N steps; a model created from that state (by another user, from the
// published checkpoint) takes the same N steps to the same bits.
func TestTrainResumeBitExact(t *testing.T) {
	e := newTrainEnv(t, Options{})
	ctx := context.Background()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(9)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyQwen3, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := []tinkerapi.Datum{sft("ab", "cd"), sft("hello", " world")}
	const n = 3
	for range n {
		e.step(tc, data, 1e-2)
	}
	mid, err := tc.SaveState(ctx, "mid", nil)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		e.step(tc, data, 1e-2)
	}
	a, err := tc.SaveState(ctx, "end", nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := tinkerapi.ParsePath(mid)
	if code, b, _ := e.do("POST", "/api/v1/training_runs/"+p.RunID+"/checkpoints/weights/mid/publish", nil); code >= 300 {
		t.Fatalf("publish = %d %s", code, b)
	}
	other := e.session("tml-someone-else")
	tc2, err := other.CreateTrainingClientFromState(ctx, mid, tinkerapi.StateOptions{Optimizer: true})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		e.step(tc2, data, 1e-2)
	}
	b, err := tc2.SaveState(ctx, "end", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{peft.WeightsFile, engine.OptimizerFile} {
		if !bytes.Equal(e.file(a, f), e.file(b, f)) {
			t.Errorf("%s of the resumed run differs from the uninterrupted one", f)
		}
	}
	// Without the optimizer state the resumed run diverges.
	tc3, err := e.sess.CreateTrainingClient(ctx, models.TinyQwen3, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tc3.LoadState(ctx, mid); err != nil {
		t.Fatal(err)
	}
	for range n {
		e.step(tc3, data, 1e-2)
	}
	c, err := tc3.SaveState(ctx, "end", nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(e.file(a, peft.WeightsFile), e.file(c, peft.WeightsFile)) {
		t.Error("load_state without the optimizer resumed like load_state_with_optimizer")
	}
}

// TestTrainerStartsFromSavedInit: a model that has run a forward pass saves
// the same bytes as an untrained one of the same seed, which the server
// writes from lib/peft without an engine.
func TestTrainerStartsFromSavedInit(t *testing.T) {
	e := newTrainEnv(t, Options{})
	ctx := context.Background()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(5)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	fresh, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	used, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := used.Forward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{sft("a", "b")}, LossFn: "cross_entropy"}); err != nil {
		t.Fatal(err)
	}
	if !e.srv.trainers.hasWeights(used.ModelID()) || e.srv.trainers.hasWeights(fresh.ModelID()) {
		t.Fatal("forward did not create a trainer, or create_model did")
	}
	for _, save := range []func(*tinkerapi.TrainingClient) (string, error){
		func(tc *tinkerapi.TrainingClient) (string, error) { return tc.SaveState(ctx, "s", nil) },
		func(tc *tinkerapi.TrainingClient) (string, error) { return tc.SaveWeightsForSampler(ctx, "s", nil) },
	} {
		p1, err := save(fresh)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := save(used)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{peft.ConfigFile, peft.WeightsFile} {
			if !bytes.Equal(e.file(p1, f), e.file(p2, f)) {
				t.Errorf("%s: %s of the trainer differs from the seed's", p1, f)
			}
		}
	}
}

// TestTrainImportanceSampling: one importance_sampling step raises the
// log-probabilities of positively-advantaged tokens and lowers those of
// negatively-advantaged ones.
func TestTrainImportanceSampling(t *testing.T) {
	e := newTrainEnv(t, Options{})
	ctx := context.Background()
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 8, Seed: new(int64(1)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	good, bad := sft("x", "yes"), sft("x", "no!")
	logprobs := func() [][]float32 {
		out, err := tc.Forward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{good, bad}, LossFn: "cross_entropy"})
		if err != nil {
			t.Fatal(err)
		}
		return out.Logprobs()
	}
	before := logprobs()
	var rl []tinkerapi.Datum
	for i, d := range []tinkerapi.Datum{good, bad} {
		adv := make([]float32, len(d.ModelInput))
		for p := range adv {
			adv[p] = []float32{1, -1}[i] * d.LossFnInputs["weights"].Float32[p]
		}
		rl = append(rl, tinkerapi.Datum{ModelInput: d.ModelInput, LossFnInputs: map[string]tinkerapi.Tensor{
			"target_tokens": d.LossFnInputs["target_tokens"], "logprobs": tinkerapi.Float32s(before[i]), "advantages": tinkerapi.Float32s(adv)}})
	}
	if _, err := tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: rl, LossFn: "importance_sampling"}); err != nil {
		t.Fatal(err)
	}
	adam := tinkerapi.DefaultAdamParams()
	adam.LearningRate = 1e-2
	if _, err := tc.OptimStep(ctx, adam); err != nil {
		t.Fatal(err)
	}
	after := logprobs()
	sum := func(lp []float32, d tinkerapi.Datum) (s float64) {
		for p, w := range d.LossFnInputs["weights"].Float32 {
			s += float64(w * lp[p])
		}
		return s
	}
	if !(sum(after[0], good) > sum(before[0], good)) || !(sum(after[1], bad) < sum(before[1], bad)) {
		t.Errorf("advantaged logprob %.4f -> %.4f, disadvantaged %.4f -> %.4f", sum(before[0], good), sum(after[0], good), sum(before[1], bad), sum(after[1], bad))
	}
}

// TestTrainRefusals: bad data and config name the datum and field; a
// request over the memory budget, a reused seq_id and an unknown loss are
// 400s; the server never waits forever on a missing seq_id.
func TestTrainRefusals(t *testing.T) {
	// 1 MiB: room for the tiny model's trainer (the budget bounds it too),
	// not for the activations of a 300-token datum.
	e := newTrainEnv(t, Options{TrainMemory: 1 << 20, SeqGapTimeout: 20 * time.Millisecond})
	ctx := context.Background()
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := sft("x", strings.Repeat("y", 300))
	_, err = tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{long}, LossFn: "cross_entropy"})
	if err == nil || !strings.Contains(err.Error(), "training budget") {
		t.Errorf("over budget: %v", err)
	}
	bad := sft("x", "y")
	bad.ModelInput = []int{1, 99999}
	bad.LossFnInputs["target_tokens"] = tinkerapi.Int64s([]int64{1, 2})
	bad.LossFnInputs["weights"] = tinkerapi.Float32s([]float32{1, 1})
	_, err = tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{sft("a", "b"), bad}, LossFn: "cross_entropy"})
	if err == nil || !strings.Contains(err.Error(), "data[1].model_input") {
		t.Errorf("token out of vocabulary: %v", err)
	}
	_, err = tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{sft("a", "b")}, LossFn: "cross_entropy", LossFnConfig: map[string]float64{"beta": 1}})
	if err == nil || !strings.Contains(err.Error(), `unknown key "beta"`) {
		t.Errorf("unknown config key: %v", err)
	}
	// The client keeps working after refusals: their seq_ids were used.
	if _, err := tc.Forward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{sft("a", "b")}, LossFn: "cross_entropy"}); err != nil {
		t.Fatal(err)
	}
	model := tc.ModelID()
	optim := func(seq int) (int, string) {
		code, b, _ := e.do("POST", "/api/v1/optim_step", map[string]any{"model_id": model, "seq_id": seq, "adam_params": map[string]any{"learning_rate": 1e-3}})
		if code == 200 {
			_, b, _ = e.poll(futureID(t, b))
		}
		return code, string(b)
	}
	if code, b := optim(2); code != 400 || !strings.Contains(b, "seq_id 2") {
		t.Errorf("reused seq_id: %d %s", code, b)
	}
	// seq 5 and 6 are never sent: seq 7 runs after the gap timeout, and a
	// late seq 6 is refused.
	if code, b := optim(7); code != 200 || !strings.Contains(b, "unclipped_grad_l2:mean") {
		t.Errorf("after a gap: %d %s", code, b)
	}
	if code, _ := optim(6); code != 400 {
		t.Errorf("a seq_id given up on = %d", code)
	}
	code, b, _ := e.do("POST", "/api/v1/optim_step", map[string]any{"model_id": model, "adam_params": map[string]any{"beta1": 1.5}})
	if code != 400 || !strings.Contains(string(b), "beta1") {
		t.Errorf("bad adam_params: %d %s", code, b)
	}
}

func futureID(t *testing.T, b []byte) string {
	t.Helper()
	i := bytes.Index(b, []byte(`"request_id":"`))
	if i < 0 {
		t.Fatalf("no request_id in %s", b)
	}
	rest := b[i+len(`"request_id":"`):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// jsonForward is the JSON body of a forward or forward_backward input.
func jsonForward(d tinkerapi.Datum, sparseWeights bool) map[string]any {
	inputs := map[string]any{"target_tokens": map[string]any{"data": d.LossFnInputs["target_tokens"].Int64, "dtype": "int64"}}
	w := d.LossFnInputs["weights"].Float32
	if sparseWeights {
		var vals []float32
		var cols []int
		for i, x := range w {
			if x != 0 {
				vals, cols = append(vals, x), append(cols, i)
			}
		}
		inputs["weights"] = map[string]any{"data": vals, "dtype": "float32", "shape": []int{1, len(w)},
			"sparse_crow_indices": []int{0, len(vals)}, "sparse_col_indices": cols}
	} else {
		inputs["weights"] = map[string]any{"data": w, "dtype": "float32"}
	}
	return map[string]any{"data": []any{map[string]any{
		"model_input":    map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": d.ModelInput}}},
		"loss_fn_inputs": inputs}}, "loss_fn": "cross_entropy"}
}

// TestTrainJSONFormsAndOrder: the JSON forward_backward (sparse weights
// included) and the legacy JSON forward give the protobuf path's numbers,
// as JSON when the poll does not accept protobuf; and a model's requests
// run in seq_id order whatever order they arrive in.
func TestTrainJSONFormsAndOrder(t *testing.T) {
	e := newTrainEnv(t, Options{})
	ctx := context.Background()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(2)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := sft("abc", "def")
	ref, err := tc.Forward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{d}, LossFn: "cross_entropy"})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(path string, body map[string]any) string {
		code, b, _ := e.do("POST", path, body)
		if code != 200 {
			t.Fatalf("POST %s = %d %s", path, code, b)
		}
		return futureID(t, b)
	}
	result := func(id string) *tinkerapi.ForwardBackwardOutput {
		_, b, h := e.poll(id)
		if h.Get("Content-Type") != "application/json" {
			t.Fatalf("result is %s", h.Get("Content-Type"))
		}
		out, err := tinkerapi.DecodeForwardBackwardJSON(b)
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return out
	}
	model := tc.ModelID()
	legacy := result(submit("/api/v1/forward", map[string]any{"model_id": model, "seq_id": 2, "forward_input": jsonForward(d, false)}))
	fb := result(submit("/api/v1/forward_backward", map[string]any{"model_id": model, "seq_id": 3, "forward_backward_input": jsonForward(d, true)}))
	for _, out := range []*tinkerapi.ForwardBackwardOutput{legacy, fb} {
		if fmt.Sprint(out.Logprobs()) != fmt.Sprint(ref.Logprobs()) || out.Metrics["loss:sum"] != ref.Metrics["loss:sum"] {
			t.Errorf("JSON result %v %v, protobuf %v %v", out.Logprobs(), out.Metrics, ref.Logprobs(), ref.Metrics)
		}
		if len(out.LossFnOutputs[0]["elementwise_loss"].Float32) != len(d.ModelInput) {
			t.Errorf("elementwise_loss missing: %+v", out.LossFnOutputs[0])
		}
	}

	// Reference: forward_backward, optim_step, forward in order on a twin.
	twin, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.step(twin, []tinkerapi.Datum{d}, 1e-2)
	want, err := twin.Forward(ctx, tinkerapi.ForwardBackwardInput{Data: []tinkerapi.Datum{d}, LossFn: "cross_entropy"})
	if err != nil {
		t.Fatal(err)
	}
	// The same three operations on a third model, the last one sent first.
	third, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	m3 := third.ModelID()
	last := submit("/api/v1/forward", map[string]any{"model_id": m3, "seq_id": 3, "forward_input": jsonForward(d, false)})
	submit("/api/v1/forward_backward", map[string]any{"model_id": m3, "seq_id": 1, "forward_backward_input": jsonForward(d, false)})
	submit("/api/v1/optim_step", map[string]any{"model_id": m3, "seq_id": 2, "adam_params": map[string]any{"learning_rate": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-12}})
	if got := result(last); fmt.Sprint(got.Logprobs()) != fmt.Sprint(want.Logprobs()) {
		t.Errorf("out of order arrival: %v, in order %v", got.Logprobs(), want.Logprobs())
	}
}

// TestTrainStateLostOnRestart: trainers live in memory, so after a restart a
// model that had stepped must refuse to train or save (not silently save its
// initialisation) until a saved state is loaded.
func TestTrainStateLostOnRestart(t *testing.T) {
	e := newTrainEnv(t, Options{})
	ctx := context.Background()
	lora := tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(5)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, lora, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := []tinkerapi.Datum{sft("ab", "cd")}
	e.step(tc, data, 1e-2)
	saved, err := tc.SaveState(ctx, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	model := tc.ModelID()

	// A second server over the same directory is the restarted one.
	pool := &engine.Pool{}
	s2, err := Open(Options{DataDir: e.dir, Now: e.clk.Now, SweepInterval: -1, Sampler: EngineSampler(pool), Engine: pool,
		FutureDelay: time.Millisecond, PollHold: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.restart(s2)
	fb := map[string]any{"model_id": model, "forward_backward_input": jsonForward(data[0], false)}
	if code, b, _ := e.do("POST", "/api/v1/forward_backward", fb); code != 400 || !strings.Contains(string(b), "lost its trained weights") {
		t.Errorf("forward_backward after restart = %d %s, want 400 naming the lost weights", code, b)
	}
	code, b, _ := e.do("POST", "/api/v1/save_weights", map[string]any{"model_id": model, "path": "s2", "type": "save_weights"})
	if code == 200 {
		_, b, _ = e.poll(futureID(t, b))
	}
	if !strings.Contains(string(b), "lost its trained weights") || !strings.Contains(string(b), "load_state") {
		t.Errorf("save after restart: %s, want a failure saying to load the last state", b)
	}
	code, b, _ = e.do("POST", "/api/v1/load_weights", map[string]any{"model_id": model, "path": saved, "optimizer": true, "type": "load_weights"})
	if code != 200 {
		t.Fatalf("load_weights = %d %s", code, b)
	}
	if _, b, _ = e.poll(futureID(t, b)); strings.Contains(string(b), "error") {
		t.Fatalf("load_weights failed: %s", b)
	}
	if code, b, _ := e.do("POST", "/api/v1/forward_backward", fb); code != 200 {
		t.Errorf("forward_backward after load_state = %d %s", code, b)
	}
}
