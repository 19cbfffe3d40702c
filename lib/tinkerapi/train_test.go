package tinkerapi

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// trainFake extends svc with the training endpoints. forward_backward
// bodies are decoded with tinkerproto and kept by seq id; results are
// computed from them: per datum, logprobs[j] = -token[j]/10 and
// elementwise_loss[j] = weights[j]·token[j]/10; metrics loss:sum (the sum
// of elementwise losses) and seq:unique.
type trainFake struct {
	*svc
	mu       sync.Mutex
	config   string                                         // client/config body
	fb       map[string]*tinkerproto.ForwardBackwardRequest // request id → body
	hold     func(requestID string) bool                    // true: answer try_again
	onSubmit func(path string, n int) (status int, body string)
}

func newTrainFake(t *testing.T) *trainFake {
	f := &trainFake{svc: newSvc(t), config: "{}", fb: map[string]*tinkerproto.ForwardBackwardRequest{}}
	f.setOverride(f.serve)
	return f
}

func (f *trainFake) serve(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool {
	f.mu.Lock()
	hold, onSubmit, config := f.hold, f.onSubmit, f.config
	f.mu.Unlock()
	if onSubmit != nil && q.Path != "/api/v1/retrieve_future" {
		if status, body := onSubmit(q.Path, n); status != 0 {
			writeJSON(w, status, body)
			return true
		}
	}
	switch q.Path {
	case "/api/v1/client/config":
		writeJSON(w, 200, config)
	case "/api/v1/forward_backward":
		if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			writeJSON(w, 415, fmt.Sprintf(`{"detail":"content type %s"}`, ct))
			return true
		}
		var m tinkerproto.ForwardBackwardRequest
		if err := tinkerproto.Unmarshal([]byte(q.Raw), &m); err != nil {
			writeJSON(w, 400, `{"detail":"bad protobuf"}`)
			return true
		}
		id := fmt.Sprintf("fb/%s/%d", m.ModelId, m.SeqId)
		f.mu.Lock()
		f.fb[id] = &m
		f.mu.Unlock()
		writeJSON(w, 200, fmt.Sprintf(`{"request_id":%q,"model_id":%q}`, id, m.ModelId))
	case "/api/v1/optim_step", "/api/v1/load_weights":
		op := strings.TrimPrefix(q.Path, "/api/v1/")
		writeJSON(w, 200, fmt.Sprintf(`{"request_id":"%s/%v/%v"}`, op, q.Body["model_id"], q.Body["seq_id"]))
	case "/api/v1/weights_info":
		writeJSON(w, 200, `{"base_model":"base/m","is_lora":true,"lora_rank":4,"train_unembed":false,"train_mlp":true}`)
	case "/api/v1/retrieve_future":
		id, _ := q.Body["request_id"].(string)
		if hold != nil && hold(id) {
			writeJSON(w, 200, `{"type":"try_again","queue_state":"active"}`)
			return true
		}
		switch kind, _, _ := strings.Cut(id, "/"); kind {
		case "fb":
			f.mu.Lock()
			m := f.fb[id]
			f.mu.Unlock()
			protoReply(fbResult(m))(w, r, n)
		case "optim_step":
			writeJSON(w, 200, `{"metrics":{"unclipped_grad_l2:mean":1.5}}`)
		case "load_weights":
			writeJSON(w, 200, `{"type":"load_weights"}`)
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// fbResult computes the fake's answer to a forward_backward request.
func fbResult(m *tinkerproto.ForwardBackwardRequest) *tinkerproto.ForwardBackwardOutput {
	var lp, el []byte
	lpOff, elOff := []int64{0}, []int64{0}
	loss := 0.0
	for _, d := range m.Data {
		toks, _ := tinkerproto.UnpackInt32(d.ModelInput[0].GetEncodedText().Tokens)
		var w []float32
		if t := d.LossFnInputs["weights"]; t != nil {
			w, _ = tinkerproto.UnpackFloat32(t.GetDense())
		}
		l, e := make([]float32, len(toks)), make([]float32, len(toks))
		for j, tok := range toks {
			l[j] = -float32(tok) / 10
			wj := float32(1)
			if w != nil {
				wj = w[j]
			}
			e[j] = wj * float32(tok) / 10
			loss += float64(e[j])
		}
		lp = append(lp, tinkerproto.PackFloat32(l)...)
		el = append(el, tinkerproto.PackFloat32(e)...)
		lpOff = append(lpOff, int64(len(lp)))
		elOff = append(elOff, int64(len(el)))
	}
	return &tinkerproto.ForwardBackwardOutput{
		LossFnOutputType: "tinker.types:ArrayRecord",
		LossFnOutputs: []*tinkerproto.ArrayRecord{{NumDatums: int64(len(m.Data)), Fields: map[string]*tinkerproto.BatchedTensor{
			"logprobs":         {Data: lp, Offsets: packInt64(lpOff), Dtype: tinkerproto.DType_DTYPE_FLOAT32},
			"elementwise_loss": {Data: el, Offsets: packInt64(elOff), Dtype: tinkerproto.DType_DTYPE_FLOAT32},
		}}},
		Metrics: map[string]float64{"loss:sum": loss, "seq:unique": float64(m.SeqId)},
	}
}

// order lists the training requests in arrival order as "path seq" or
// "poll <request id>" (create_model's polls left out).
func (f *trainFake) order() []string {
	f.svc.mu.Lock()
	defer f.svc.mu.Unlock()
	var out []string
	for _, q := range f.svc.reqs {
		switch q.Path {
		case "/api/v1/forward_backward":
			var m tinkerproto.ForwardBackwardRequest
			tinkerproto.Unmarshal([]byte(q.Raw), &m)
			out = append(out, fmt.Sprintf("forward_backward %d", m.SeqId))
		case "/api/v1/optim_step", "/api/v1/save_weights", "/api/v1/save_weights_for_sampler", "/api/v1/load_weights":
			out = append(out, fmt.Sprintf("%s %v", strings.TrimPrefix(q.Path, "/api/v1/"), q.Body["seq_id"]))
		case "/api/v1/retrieve_future":
			if id := fmt.Sprint(q.Body["request_id"]); !strings.HasPrefix(id, "cm/") {
				out = append(out, "poll "+id)
			}
		}
	}
	return out
}

func (f *trainFake) set(fn func(f *trainFake)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func newTrainer(t *testing.T, f *trainFake) *TrainingClient {
	t.Helper()
	tc, err := fastSession(t, f.svc, nil).CreateTrainingClient(ctxT(t), "base/m", DefaultLoraConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// sftDatum is a supervised datum: tokens, next-token targets, weights.
func sftDatum(tokens ...int) Datum {
	targets := make([]int64, len(tokens))
	weights := make([]float32, len(tokens))
	for i, tok := range tokens {
		targets[i] = int64(tok + 1)
		weights[i] = float32(i % 2)
	}
	return Datum{ModelInput: tokens, LossFnInputs: map[string]Tensor{"target_tokens": Int64s(targets), "weights": Float32s(weights)}}
}

func TestForwardBackwardWireRoundTrip(t *testing.T) {
	f := newTrainFake(t)
	tc := newTrainer(t, f)
	ctx := ctxT(t)
	in := ForwardBackwardInput{Data: []Datum{sftDatum(5, 6, 7), sftDatum(8, 9)}, LossFn: "ppo",
		LossFnConfig: map[string]float64{"clip_low_threshold": 0.7}}
	for i := range in.Data {
		n := len(in.Data[i].ModelInput)
		in.Data[i].LossFnInputs["logprobs"] = Float32s(make([]float32, n))
		in.Data[i].LossFnInputs["advantages"] = Float32s(append(make([]float32, n-1), -2.5))
	}
	out, err := tc.ForwardBackward(ctx, in)
	if err != nil {
		t.Fatal(err)
	}

	// The body the fake decoded carries everything, packed as the schema says.
	m := f.fb["fb/"+tc.ModelID()+"/1"]
	if m == nil {
		t.Fatalf("no forward_backward with seq_id 1: %v", f.order())
	}
	if m.ModelId != "sess-1:train:0" || m.LossFn != "ppo" || m.ForwardOnly || m.LossFnConfig["clip_low_threshold"] != 0.7 || len(m.Data) != 2 {
		t.Errorf("request %v", m)
	}
	d0 := m.Data[1]
	if toks, _ := tinkerproto.UnpackInt32(d0.ModelInput[0].GetEncodedText().Tokens); fmt.Sprint(toks) != "[8 9]" {
		t.Errorf("tokens %v", toks)
	}
	tt := d0.LossFnInputs["target_tokens"]
	if tt.Dtype != tinkerproto.DType_DTYPE_INT64 || fmt.Sprint(tt.Shape) != "[2]" ||
		binary.LittleEndian.Uint64(tt.GetDense()) != 9 || binary.LittleEndian.Uint64(tt.GetDense()[8:]) != 10 {
		t.Errorf("target_tokens %v", tt)
	}
	adv := d0.LossFnInputs["advantages"]
	if v, _ := tinkerproto.UnpackFloat32(adv.GetDense()); adv.Dtype != tinkerproto.DType_DTYPE_FLOAT32 || fmt.Sprint(v) != "[0 -2.5]" {
		t.Errorf("advantages %v", adv)
	}
	sub := f.requests("/api/v1/forward_backward")[0]
	if sub.Header.Get("Content-Type") != "application/x-protobuf" || sub.Header.Get("X-Idempotency-Key") == "" {
		t.Errorf("submission headers %v", sub.Header)
	}
	for _, p := range f.requests("/api/v1/retrieve_future") {
		if strings.HasPrefix(fmt.Sprint(p.Body["request_id"]), "fb/") &&
			(p.Header.Get("Accept") != "application/x-protobuf" || p.Header.Get("X-Tinker-Request-Type") != "ForwardBackward") {
			t.Errorf("poll headers %v", p.Header)
		}
	}

	// The result decodes per datum, in order.
	if out.LossFnOutputType != "ArrayRecord" || len(out.LossFnOutputs) != 2 {
		t.Fatalf("output %+v", out)
	}
	if lp := out.Logprobs(); fmt.Sprint(lp) != "[[-0.5 -0.6 -0.7] [-0.8 -0.9]]" {
		t.Errorf("logprobs %v", lp)
	}
	if el := out.LossFnOutputs[0]["elementwise_loss"]; fmt.Sprint(el.Float32) != "[0 0.6 0]" {
		t.Errorf("elementwise_loss %v", el)
	}
	if loss, ok := out.Loss(); !ok || math.Abs(loss-1.5) > 1e-6 {
		t.Errorf("loss %v %v", loss, ok)
	}

	// forward sends forward_only and polls as Forward.
	if _, err := tc.Forward(ctx, ForwardBackwardInput{Data: []Datum{sftDatum(1)}, LossFn: "cross_entropy"}); err != nil {
		t.Fatal(err)
	}
	if m := f.fb["fb/"+tc.ModelID()+"/2"]; m == nil || !m.ForwardOnly || len(m.LossFnConfig) != 0 {
		t.Errorf("forward request %v", m)
	}
	polls := f.requests("/api/v1/retrieve_future")
	if k := polls[len(polls)-1].Header.Get("X-Tinker-Request-Type"); k != "Forward" {
		t.Errorf("forward polled as %q", k)
	}
}

func TestForwardBackwardChunking(t *testing.T) {
	f := newTrainFake(t)
	f.config = `{"fwdbwd_max_chunk_len":2,"fwdbwd_max_chunk_bytes_count":100}`
	tc := newTrainer(t, f)
	// Each token costs 4 + 8 (target) + 4 (weight) = 16 estimated bytes.
	// Chunks: 32+32 (count limit), 32+64 (96 bytes), 64 (a second 64
	// would pass 100), 160 (over the limit on its own), 16.
	data := []Datum{sftDatum(1, 1), sftDatum(2, 2), sftDatum(3, 3),
		sftDatum(4, 4, 4, 4), sftDatum(5, 5, 5, 5),
		sftDatum(make([]int, 10)...),
		sftDatum(7)}
	data[5].ModelInput[0] = 6
	out, err := tc.ForwardBackward(ctxT(t), ForwardBackwardInput{Data: data, LossFn: "cross_entropy"})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for seq := 1; seq <= 5; seq++ {
		m := f.fb[fmt.Sprintf("fb/%s/%d", tc.ModelID(), seq)]
		if m == nil {
			t.Fatalf("no chunk with seq %d: %v", seq, f.order())
		}
		sizes = append(sizes, len(m.Data))
	}
	if fmt.Sprint(sizes) != "[2 2 1 1 1]" || len(f.fb) != 5 {
		t.Errorf("chunk sizes %v (%d requests)", sizes, len(f.fb))
	}
	// Outputs come back in input order across chunks.
	var firsts []float32
	for _, lp := range out.Logprobs() {
		firsts = append(firsts, -10*lp[0])
	}
	if fmt.Sprint(firsts) != "[1 2 3 4 5 6 7]" {
		t.Errorf("first token of each output %v", firsts)
	}
	// seq:unique is kept per chunk; loss:sum adds up.
	if out.Metrics["seq:unique"] != 1 || out.Metrics["seq:unique_1"] != 2 || out.Metrics["seq:unique_4"] != 5 {
		t.Errorf("metrics %v", out.Metrics)
	}
	want := 0.0
	for _, d := range data {
		for j, tok := range d.ModelInput {
			want += float64(j%2) * float64(tok) / 10
		}
	}
	if math.Abs(out.Metrics["loss:sum"]-want) > 1e-5 {
		t.Errorf("loss:sum %v, want %v", out.Metrics["loss:sum"], want)
	}
}

func TestChunkDataGreedy(t *testing.T) {
	d := func(n int) Datum { return Datum{ModelInput: make([]int, n)} } // 4n bytes
	sizes := func(cs [][]Datum) string {
		var s []int
		for _, c := range cs {
			s = append(s, len(c))
		}
		return fmt.Sprint(s)
	}
	data := []Datum{d(10), d(10), d(5), d(30), d(1), d(1), d(1)}
	if got := sizes(chunkData(data, ChunkLimits{MaxLen: 1024, MaxBytes: 100})); got != "[3 1 3]" {
		t.Errorf("by bytes: %s", got)
	}
	if got := sizes(chunkData(data, ChunkLimits{MaxLen: 3, MaxBytes: 1 << 30})); got != "[3 3 1]" {
		t.Errorf("by count: %s", got)
	}
	if got := sizes(chunkData(data[:1], ChunkLimits{MaxLen: 1, MaxBytes: 1})); got != "[1]" {
		t.Errorf("oversized single: %s", got)
	}
	if l := chunkLimitsFrom([]byte(`{"fwdbwd_max_chunk_len":0,"other":1}`)); l != defaultChunkLimits {
		t.Errorf("defaults: %+v", l)
	}
	full := Datum{ModelInput: []int{1, 2, 3}, LossFnInputs: map[string]Tensor{"target_tokens": Int64s(make([]int64, 3)), "weights": Float32s(make([]float32, 3))}}
	if n := full.estimatedBytes(); n != 3*4+3*8+3*4 {
		t.Errorf("estimated bytes %d", n)
	}
}

func TestSeqIDsAcrossChunksAndSteps(t *testing.T) {
	f := newTrainFake(t)
	f.config = `{"fwdbwd_max_chunk_len":2}`
	tc := newTrainer(t, f)
	ctx := ctxT(t)
	batch := ForwardBackwardInput{Data: []Datum{sftDatum(1), sftDatum(2), sftDatum(3)}, LossFn: "cross_entropy"}
	for step := 0; step < 2; step++ {
		if _, err := tc.ForwardBackward(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if _, err := tc.OptimStep(ctx, DefaultAdamParams()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tc.SaveState(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	if err := tc.LoadStateWithOptimizer(ctx, "tinker://"+tc.ModelID()+"/weights/s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.SaveWeightsForSampler(ctx, "final", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.GetInfo(ctx); err != nil { // takes no seq id
		t.Fatal(err)
	}
	if _, err := tc.Forward(ctx, ForwardBackwardInput{Data: []Datum{sftDatum(1)}, LossFn: "cross_entropy"}); err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, e := range f.order() {
		if !strings.HasPrefix(e, "poll") {
			subs = append(subs, e)
		}
	}
	want := "[forward_backward 1 forward_backward 2 optim_step 3 forward_backward 4 forward_backward 5 optim_step 6 " +
		"save_weights 7 load_weights 8 save_weights_for_sampler 9 forward_backward 10]"
	if fmt.Sprint(subs) != want {
		t.Errorf("submissions\n got %v\nwant %s", subs, want)
	}
	if q := f.requests("/api/v1/create_model")[0]; q.Body["model_seq_id"] != 0.0 {
		t.Errorf("create_model %s", q.Raw)
	}
	if q := f.requests("/api/v1/optim_step")[0]; q.Raw != `{"adam_params":{"learning_rate":0.0001,"beta1":0.9,"beta2":0.95,"eps":1e-12,"weight_decay":0.0,"grad_clip_norm":0.0},"model_id":"sess-1:train:0","seq_id":3,"type":"optim_step"}` {
		t.Errorf("optim_step body %s", q.Raw)
	}
	if q := f.requests("/api/v1/load_weights")[0]; q.Raw != `{"model_id":"sess-1:train:0","path":"tinker://sess-1:train:0/weights/s1","seq_id":8,"optimizer":true,"type":"load_weights"}` {
		t.Errorf("load_weights body %s", q.Raw)
	}
}

func TestPipelinedStepSubmitsBeforeAwaiting(t *testing.T) {
	f := newTrainFake(t)
	tc := newTrainer(t, f)
	ctx := ctxT(t)
	// The forward_backward result is withheld until optim_step arrives: a
	// client that awaited it before submitting the step would never finish.
	f.set(func(f *trainFake) {
		f.hold = func(id string) bool { return strings.HasPrefix(id, "fb/") && f.count("/api/v1/optim_step") == 0 }
	})
	fb, err := tc.ForwardBackwardAsync(ctx, ForwardBackwardInput{Data: []Datum{sftDatum(3, 4)}, LossFn: "cross_entropy"})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := tc.OptimStepAsync(ctx, AdamParams{LearningRate: 0.5, Beta1: 0.8, Beta2: 0.9, Eps: 1e-8, WeightDecay: 0.1, GradClipNorm: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.order(); fmt.Sprint(got) != "[forward_backward 1 optim_step 2]" {
		t.Errorf("before any wait: %v", got)
	}
	res, err := fb.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	om, err := opt.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if om.Metrics["unclipped_grad_l2:mean"] != 1.5 || len(res.LossFnOutputs) != 1 {
		t.Errorf("results %+v %+v", res, om)
	}
	// Wait keeps the result: no further polls.
	polls := f.count("/api/v1/retrieve_future")
	if again, err := fb.Wait(ctx); err != nil || again != res || f.count("/api/v1/retrieve_future") != polls {
		t.Errorf("second Wait: %v %v", again, err)
	}
	if q := f.requests("/api/v1/optim_step")[0]; !strings.Contains(q.Raw, `"adam_params":{"learning_rate":0.5,"beta1":0.8,"beta2":0.9,"eps":1e-8,"weight_decay":0.1,"grad_clip_norm":1.0}`) {
		t.Errorf("optim_step body %s", q.Raw)
	}
}

func TestWaitCancelledThenResumed(t *testing.T) {
	f := newTrainFake(t)
	tc := newTrainer(t, f)
	held := true
	cctx, cancel := context.WithCancel(ctxT(t))
	f.set(func(f *trainFake) {
		f.hold = func(string) bool {
			f.mu.Lock() // called without f.mu held
			defer f.mu.Unlock()
			if held {
				cancel() // the caller gives up while the step is running
			}
			return held
		}
	})
	fut, err := tc.ForwardBackwardAsync(ctxT(t), ForwardBackwardInput{Data: []Datum{sftDatum(1)}, LossFn: "cross_entropy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fut.Wait(cctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "forward_backward on sess-1:train:0") {
		t.Fatalf("cancelled wait: %v", err)
	}
	f.set(func(*trainFake) { held = false })
	res, err := fut.Wait(ctxT(t))
	if err != nil || len(res.LossFnOutputs) != 1 {
		t.Fatalf("resumed wait: %+v %v", res, err)
	}
	// The cancelled submission context does not affect the next operation.
	if _, err := tc.OptimStep(ctxT(t), DefaultAdamParams()); err != nil {
		t.Fatal(err)
	}
}

func TestTrainingSubmissionRetries(t *testing.T) {
	f := newTrainFake(t)
	tc := newTrainer(t, f)
	f.set(func(f *trainFake) {
		f.onSubmit = func(path string, n int) (int, string) {
			switch {
			case path == "/api/v1/forward_backward" && n == 1:
				return 503, `{"detail":"overloaded"}`
			case path == "/api/v1/forward_backward" && n == 2:
				return 429, `{"detail":"slow down"}`
			case path == "/api/v1/optim_step" && n == 1:
				return 500, `{"detail":"oops"}`
			case path == "/api/v1/save_weights":
				return 422, `{"detail":"bad name"}`
			}
			return 0, ""
		}
	})
	ctx := ctxT(t)
	if _, err := tc.ForwardBackward(ctx, ForwardBackwardInput{Data: []Datum{sftDatum(1, 2)}, LossFn: "cross_entropy"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.OptimStep(ctx, DefaultAdamParams()); err != nil {
		t.Fatal(err)
	}
	// The retries of one request repeat its body (same seq id) and key.
	fbs := f.requests("/api/v1/forward_backward")
	if len(fbs) != 3 || fbs[0].Raw != fbs[2].Raw || fbs[0].Header.Get("X-Idempotency-Key") != fbs[2].Header.Get("X-Idempotency-Key") ||
		fbs[2].Header.Get("X-Stainless-Retry-Count") != "2" {
		t.Errorf("forward_backward attempts %d", len(fbs))
	}
	if os := f.requests("/api/v1/optim_step"); len(os) != 2 || os[1].Body["seq_id"] != 2.0 {
		t.Errorf("optim_step attempts %v", len(os))
	}
	// 422 is final.
	_, err := tc.SaveState(ctx, "x", nil)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 422 || f.count("/api/v1/save_weights") != 1 {
		t.Errorf("save: %v after %d attempts", err, f.count("/api/v1/save_weights"))
	}
}

func TestTrainingErrorsHideSecrets(t *testing.T) {
	f := newTrainFake(t)
	tc := newTrainer(t, f)
	f.set(func(f *trainFake) {
		f.onSubmit = func(path string, _ int) (int, string) {
			if path == "/api/v1/forward_backward" {
				return 400, `{"detail":"bad key ` + testKey + `"}`
			}
			return 0, ""
		}
	})
	_, err := tc.ForwardBackward(ctxT(t), ForwardBackwardInput{Data: []Datum{sftDatum(1)}, LossFn: "cross_entropy"})
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "bad key") {
		t.Errorf("error %v", err)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || strings.Contains(string(apiErr.Body), testKey) {
		t.Errorf("error body %q", apiErr.Body)
	}
}

func TestTrainingValidationTakesNoSeqID(t *testing.T) {
	f := newTrainFake(t)
	tc := newTrainer(t, f)
	ctx := ctxT(t)
	good := sftDatum(1, 2)
	short := sftDatum(1, 2)
	short.LossFnInputs["weights"] = Float32s([]float32{1})
	wrongType := sftDatum(1, 2)
	wrongType.LossFnInputs["target_tokens"] = Float32s([]float32{1, 2})
	for _, tc2 := range []struct {
		in   ForwardBackwardInput
		want string
	}{
		{ForwardBackwardInput{LossFn: "cross_entropy"}, "no data"},
		{ForwardBackwardInput{Data: []Datum{good}, LossFn: "mse"}, `unknown loss function "mse"`},
		{ForwardBackwardInput{Data: []Datum{good, short}, LossFn: "cross_entropy"}, `datum 1: loss_fn_inputs["weights"] has shape [1]; want (2,)`},
		{ForwardBackwardInput{Data: []Datum{wrongType}, LossFn: "cross_entropy"}, `must be int64, got float32`},
		{ForwardBackwardInput{Data: []Datum{good}, LossFn: "importance_sampling"}, `needs loss_fn_inputs["logprobs"]`},
		{ForwardBackwardInput{Data: []Datum{{ModelInput: []int{-1}, LossFnInputs: good.LossFnInputs}}, LossFn: "cross_entropy"}, "not a valid token id"},
		{ForwardBackwardInput{Data: []Datum{good}, LossFn: "ppo", LossFnConfig: map[string]float64{"x": math.NaN()}}, "is NaN"},
	} {
		if _, err := tc.ForwardBackwardAsync(ctx, tc2.in); err == nil || !strings.Contains(err.Error(), tc2.want) {
			t.Errorf("want %q, got %v", tc2.want, err)
		}
	}
	if _, err := tc.OptimStepAsync(ctx, AdamParams{LearningRate: 1, Beta1: 1}); err == nil || !strings.Contains(err.Error(), "below 1") {
		t.Errorf("beta1 1: %v", err)
	}
	if _, err := tc.OptimStepAsync(ctx, AdamParams{LearningRate: -1}); err == nil || !strings.Contains(err.Error(), "learning_rate") {
		t.Errorf("negative lr: %v", err)
	}
	if err := tc.LoadState(ctx, "tinker://run/sampler_weights/x"); err == nil || !strings.Contains(err.Error(), "sampler checkpoint") {
		t.Errorf("load sampler path: %v", err)
	}
	if _, err := tc.SaveState(ctx, "a/b", nil); err == nil {
		t.Error("slash in name accepted")
	}
	// Nothing reached the server, so the first real operation is seq 1.
	if _, err := tc.OptimStep(ctx, DefaultAdamParams()); err != nil {
		t.Fatal(err)
	}
	if got := f.order(); len(got) == 0 || got[0] != "optim_step 1" {
		t.Errorf("order %v", got)
	}
}

func TestCreateTrainingClientFromState(t *testing.T) {
	f := newTrainFake(t)
	sess := fastSession(t, f.svc, nil)
	ctx := ctxT(t)
	const path = "tinker://old:train:0/weights/ckpt"
	tc, err := sess.CreateTrainingClientFromState(ctx, path, StateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tc.ModelID() != "sess-1:train:0" || tc.BaseModel() != "base/m" {
		t.Errorf("client %s on %s", tc.ModelID(), tc.BaseModel())
	}
	// The new model copies the checkpoint's LoRA configuration, then loads it as seq 1.
	if q := f.requests("/api/v1/create_model")[0]; !strings.Contains(q.Raw, `"lora_config":{"rank":4,"train_unembed":false,"train_mlp":true,"train_attn":true}`) {
		t.Errorf("create_model %s", q.Raw)
	}
	if q := f.requests("/api/v1/load_weights")[0]; q.Raw != `{"model_id":"sess-1:train:0","path":"`+path+`","seq_id":1,"optimizer":false,"type":"load_weights"}` {
		t.Errorf("load_weights %s", q.Raw)
	}
	if _, err := tc.OptimStep(ctx, DefaultAdamParams()); err != nil {
		t.Fatal(err)
	}
	if q := f.requests("/api/v1/optim_step")[0]; q.Body["seq_id"] != 2.0 {
		t.Errorf("first step after load has seq %v", q.Body["seq_id"])
	}

	// A server that asks for it gets a single load_weights addressed by session.
	f2 := newTrainFake(t)
	f2.config = `{"create_model_via_load_weights":true}`
	sess2 := fastSession(t, f2.svc, nil)
	tc2, err := sess2.CreateTrainingClientFromState(ctx, path, StateOptions{Optimizer: true, UserMetadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc2.ModelID() != "sess-1:train:0" || tc2.BaseModel() != "m" {
		t.Errorf("client %s on %s", tc2.ModelID(), tc2.BaseModel())
	}
	if q := f2.requests("/api/v1/load_weights"); len(q) != 1 || q[0].Raw != `{"session_id":"sess-1","model_seq_id":0,"user_metadata":{"k":"v"},"path":"`+path+`","optimizer":true,"type":"load_weights"}` {
		t.Errorf("load_weights %v", q)
	}
	if f2.count("/api/v1/create_model") != 0 || f2.count("/api/v1/weights_info") != 0 {
		t.Error("extra calls in the one-request flow")
	}
	if _, err := sess.CreateTrainingClientFromState(ctx, "tinker://x/sampler_weights/y", StateOptions{}); err == nil {
		t.Error("sampler path accepted")
	}
}

func TestDecodeForwardBackwardProtoRecords(t *testing.T) {
	bf16 := func(v ...float32) []byte { // upper halves of float32 bits
		b := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(x)>>16))
		}
		return b
	}
	m := &tinkerproto.ForwardBackwardOutput{
		LossFnOutputType: "ArrayRecord",
		LossFnOutputs: []*tinkerproto.ArrayRecord{
			{NumDatums: 2, Fields: map[string]*tinkerproto.BatchedTensor{
				"logprobs": {Data: bf16(-1, -0.5, 2), Offsets: packInt64([]int64{0, 4, 6}), Dtype: tinkerproto.DType_DTYPE_BFLOAT16},
				"ids":      {Data: tinkerproto.PackInt32([]int{1, 2, 3, 4, 5, 6}), Offsets: packInt64([]int64{0, 16, 24}), Dtype: tinkerproto.DType_DTYPE_INT32, TrailingShape: []int64{2}},
			}},
			// num_datums unset: counted from the field.
			{Fields: map[string]*tinkerproto.BatchedTensor{
				"logprobs": {Data: tinkerproto.PackFloat32([]float32{0.25}), Offsets: packInt64([]int64{0, 4}), Dtype: tinkerproto.DType_DTYPE_FLOAT32},
				"ids":      {Data: packInt64([]int64{9, 8}), Offsets: packInt64([]int64{0, 16}), Dtype: tinkerproto.DType_DTYPE_INT64, TrailingShape: []int64{2}},
			}},
		},
		Metrics: map[string]float64{"loss:sum": 3},
	}
	b, _ := tinkerproto.Marshal(m)
	out, err := DecodeForwardBackwardProto(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out.Logprobs()) != "[[-1 -0.5] [2] [0.25]]" {
		t.Errorf("logprobs %v", out.Logprobs())
	}
	ids := out.LossFnOutputs[0]["ids"]
	if fmt.Sprint(ids.Int64, ids.Shape) != "[1 2 3 4] [2 2]" || fmt.Sprint(out.LossFnOutputs[2]["ids"].Int64) != "[9 8]" {
		t.Errorf("ids %v", out.LossFnOutputs)
	}
	m.LossFnOutputs[0].Fields["logprobs"].Offsets = packInt64([]int64{0, 4, 9})
	b, _ = tinkerproto.Marshal(m)
	if _, err := DecodeForwardBackwardProto(b); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("bad offsets: %v", err)
	}
}

func TestDecodeForwardBackwardJSONSparse(t *testing.T) {
	body := `{"loss_fn_output_type":"ArrayRecord","metrics":{"loss:sum":2},"loss_fn_outputs":[
	 {"logprobs":{"data":[-1,-2],"dtype":"float32"},
	  "m":{"data":[5,7],"dtype":"int64","shape":[2,3],"sparse_crow_indices":[0,1,2],"sparse_col_indices":[2,0]}}]}`
	out, err := DecodeForwardBackwardJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if m := out.LossFnOutputs[0]["m"]; fmt.Sprint(m.Int64, m.Shape) != "[0 0 5 7 0 0] [2 3]" {
		t.Errorf("sparse %v", m)
	}
	if fmt.Sprint(out.Logprobs()) != "[[-1 -2]]" || out.Metrics["loss:sum"] != 2 {
		t.Errorf("output %+v", out)
	}
	bad := `{"loss_fn_outputs":[{"m":{"data":[5],"dtype":"int64","shape":[2,3],"sparse_crow_indices":[0,1,2],"sparse_col_indices":[9]}}]}`
	if _, err := DecodeForwardBackwardJSON([]byte(bad)); err == nil {
		t.Error("inconsistent CSR accepted")
	}
}
