package tinkerapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// sdkBodies are the JSON bodies the official SDK 0.25 sends, as field
// path → JSON type ("int" and "float" told apart by the number's text, as
// a strict server would). Keys a call may leave out are marked "?".
var sdkBodies = map[string]map[string]string{
	"POST /api/v1/client/config":     {"sdk_version": "string"},
	"POST /api/v1/create_session":    {"tags": "array", "user_metadata": "object", "sdk_version": "string", "type": "string", "project_id?": "string"},
	"POST /api/v1/session_heartbeat": {"session_id": "string", "type": "string"},
	"POST /api/v1/create_sampling_session": {"session_id": "string", "sampling_session_seq_id": "int",
		"base_model?": "string", "model_path?": "string", "type": "string"},
	"POST /api/v1/asample": {"num_samples": "int", "prompt": "object", "prompt.chunks": "array", "prompt.chunks[]": "object", "prompt.chunks[].tokens": "array",
		"prompt.chunks[].tokens[]": "int", "prompt.chunks[].type": "string", "sampling_params": "object",
		"sampling_params.max_tokens": "int", "sampling_params.seed?": "int", "sampling_params.stop?": "array", "sampling_params.stop[]?": "string",
		"sampling_params.temperature": "float", "sampling_params.top_k": "int", "sampling_params.top_p": "float",
		"sampling_session_id": "string", "seq_id": "int", "prompt_logprobs": "bool", "topk_prompt_logprobs": "int", "type": "string"},
	"POST /api/v1/retrieve_future": {"request_id": "string", "allow_metadata_only": "bool"},
	"POST /api/v1/create_model": {"session_id": "string", "model_seq_id": "int", "base_model": "string", "user_metadata?": "object",
		"lora_config": "object", "lora_config.rank": "int", "lora_config.seed?": "int", "lora_config.train_unembed": "bool",
		"lora_config.train_mlp": "bool", "lora_config.train_attn": "bool", "type": "string"},
	"POST /api/v1/optim_step": {"adam_params": "object", "adam_params.learning_rate": "float", "adam_params.beta1": "float",
		"adam_params.beta2": "float", "adam_params.eps": "float", "adam_params.weight_decay": "float", "adam_params.grad_clip_norm": "float",
		"model_id": "string", "seq_id": "int", "type": "string"},
	"POST /api/v1/save_weights_for_sampler": {"model_id": "string", "path": "string", "seq_id": "int", "ttl_seconds?": "int", "type": "string"},
	"POST /api/v1/save_weights":             {"model_id": "string", "path": "string", "seq_id": "int", "ttl_seconds?": "int", "overwrite": "bool", "type": "string"},
	"PUT ttl":                               {"ttl_seconds": "int"},
}

// jsonShape flattens a JSON body into field path → type; arrays are
// described by their first element.
func jsonShape(b []byte) (map[string]string, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		join := func(k string) string {
			if prefix == "" {
				return k
			}
			return prefix + "." + k
		}
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				out[join(k)] = typeName(x)
				walk(join(k), x)
			}
		case []any:
			if len(v) > 0 {
				out[prefix+"[]"] = typeName(v[0])
				walk(prefix+"[]", v[0])
			}
		}
	}
	walk("", v)
	return out, nil
}

func typeName(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		if strings.ContainsAny(v.String(), ".eE") {
			return "float"
		}
		return "int"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// checkBody compares a body's shape with the SDK's: every field the SDK
// always sends is there with its type, and nothing else is.
func checkBody(t *testing.T, key string, s *seen) {
	t.Helper()
	want, ok := sdkBodies[key]
	if !ok {
		return
	}
	got, err := jsonShape(s.Plain)
	if err != nil {
		t.Errorf("%s: body is not JSON: %v", key, err)
		return
	}
	for f, typ := range want {
		name, optional := strings.CutSuffix(f, "?")
		g, present := got[name]
		if !present && !optional {
			t.Errorf("%s: field %s missing (SDK sends %s); body %s", key, name, typ, s.Plain)
		} else if present && g != typ {
			t.Errorf("%s: field %s is a JSON %s, the SDK sends %s; body %s", key, name, g, typ, s.Plain)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			if _, ok := want[name+"?"]; !ok {
				t.Errorf("%s: field %s is not one the SDK sends; body %s", key, name, s.Plain)
			}
		}
	}
}

var idemKey = regexp.MustCompile(`^stainless-python-retry-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// checkHeaders checks the headers every request carries, as the SDK
// sends them, with tinker's own User-Agent and runtime.
func checkHeaders(t *testing.T, s *seen) {
	t.Helper()
	h := s.Header
	want := map[string]string{"X-Api-Key": "tml-wire", "Accept-Encoding": "gzip, deflate", "X-Stainless-Package-Version": tinkerapi.SDKVersion,
		"X-Stainless-Runtime": "go", "X-Stainless-Async": "async:goroutines"}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s %s: %s = %q, want %q", s.Method, s.Path, k, h.Get(k), v)
		}
	}
	for _, k := range []string{"X-Stainless-Os", "X-Stainless-Arch", "X-Stainless-Runtime-Version", "X-Stainless-Retry-Count", "X-Stainless-Read-Timeout"} {
		if h.Get(k) == "" {
			t.Errorf("%s %s: %s missing", s.Method, s.Path, k)
		}
	}
	if ua := h.Get("User-Agent"); !strings.HasPrefix(ua, "tinker/9.9.9 ") || !strings.Contains(ua, "AsyncTinker/Python "+tinkerapi.SDKVersion) {
		t.Errorf("%s %s: User-Agent %q, want tinker/<version> naming the SDK it speaks for", s.Method, s.Path, ua)
	}
	if s.Method != "GET" && !idemKey.MatchString(h.Get("X-Idempotency-Key")) {
		t.Errorf("%s %s: X-Idempotency-Key %q", s.Method, s.Path, h.Get("X-Idempotency-Key"))
	}
}

// TestWireMatchesSDK drives every operation through the proxy without
// faults and checks each request against the SDK's form.
func TestWireMatchesSDK(t *testing.T) {
	e := newWireEnv(t)
	ctx := t.Context()
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	ss, err := e.sess.CreateSamplingSession(ctx, models.TinyLlama, "")
	must(err, "create sampling session")
	greedy := tinkerapi.NewSampleRequest([]int{models.TinyBOS, 'H', 'i'})
	greedy.Temperature, greedy.MaxTokens = 0, 4
	_, err = e.sess.Sample(ctx, ss, greedy)
	must(err, "sample base")
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true}, nil)
	must(err, "create model")
	var data []tinkerapi.Datum
	for range 4 {
		data = append(data, wireDatum(strings.Repeat("the quick brown fox ", 20)))
	}
	_, err = tc.ForwardBackward(ctx, tinkerapi.ForwardBackwardInput{Data: data, LossFn: "cross_entropy"})
	must(err, "forward_backward")
	p := tinkerapi.DefaultAdamParams() // weight_decay and grad_clip_norm 0: floats on the wire
	_, err = tc.OptimStep(ctx, p)
	must(err, "optim_step")
	samplerPath, err := tc.SaveWeightsForSampler(ctx, "final", nil)
	must(err, "save for sampler")
	_, err = tc.SaveState(ctx, "0001", nil)
	must(err, "save state")
	ss2, err := e.sess.CreateSamplingSession(ctx, "", samplerPath)
	must(err, "sampling session on the checkpoint")
	_, err = e.sess.Sample(ctx, ss2, greedy)
	must(err, "sample checkpoint")
	run := tc.ModelID()
	_, err = e.c.ListTrainingRuns(ctx, 20, 0, "")
	must(err, "list runs")
	_, err = e.c.ListRunCheckpoints(ctx, run)
	must(err, "list run checkpoints")
	_, err = e.c.ListUserCheckpoints(ctx, 100, 0)
	must(err, "list checkpoints")
	must(e.c.PublishCheckpoint(ctx, run, "sampler_weights/final"), "publish")
	ttl := int64(3600)
	must(e.c.SetCheckpointTTL(ctx, run, "weights/0001", &ttl), "set ttl")
	_, err = e.c.ArchiveURL(ctx, run, "sampler_weights/final")
	must(err, "archive url")
	must(e.c.DeleteCheckpoint(ctx, run, "weights/0001"), "delete")
	time.Sleep(120 * time.Millisecond) // a heartbeat or two

	paths := map[string]int{}
	for _, ev := range e.proxy.take() {
		s := ev.req
		if s == nil {
			continue
		}
		key := s.Method + " " + s.Path
		if strings.HasSuffix(s.Path, "/ttl") {
			key = "PUT ttl"
		}
		paths[key]++
		checkHeaders(t, s)
		if s.Header.Get("X-Stainless-Retry-Count") != "0" {
			t.Errorf("%s: retry count %s without a fault", key, s.Header.Get("X-Stainless-Retry-Count"))
		}
		if s.Method != "GET" && s.Path != "/api/v1/forward_backward" && len(s.Body) > 0 {
			checkBody(t, key, s)
		}
		checkQuery(t, s)
		if s.Path == "/api/v1/forward_backward" {
			checkFwdBody(t, s)
		}
	}
	for _, want := range []string{"POST /api/v1/client/config", "POST /api/v1/create_session", "POST /api/v1/session_heartbeat",
		"POST /api/v1/create_sampling_session", "POST /api/v1/asample", "POST /api/v1/retrieve_future", "POST /api/v1/create_model",
		"POST /api/v1/forward_backward", "POST /api/v1/optim_step", "POST /api/v1/save_weights_for_sampler", "POST /api/v1/save_weights",
		"GET /api/v1/training_runs", "GET /api/v1/checkpoints", "PUT ttl"} {
		if paths[want] == 0 {
			t.Errorf("no %s seen; saw %v", want, sortedKeys(paths))
		}
	}
}

// checkQuery pins the query strings of the listings to the SDK's.
func checkQuery(t *testing.T, s *seen) {
	t.Helper()
	want := map[string]string{
		"/api/v1/training_runs": "limit=20&offset=0&access_scope=owned",
		"/api/v1/checkpoints":   "limit=100&offset=0",
	}[s.Path]
	if s.Method == "GET" && want != "" && s.Query != want {
		t.Errorf("GET %s?%s, the SDK sends ?%s", s.Path, s.Query, want)
	}
	if s.Method == "GET" && want == "" && s.Query != "" && !strings.HasPrefix(s.Path, "/api/v1/training_runs/") {
		t.Errorf("GET %s?%s: unexpected query", s.Path, s.Query)
	}
}

// checkFwdBody: the server offered proto_compress_fwdbwd, so the body is
// a zstd frame of the ForwardBackwardRequest protobuf, much smaller.
func checkFwdBody(t *testing.T, s *seen) {
	t.Helper()
	if s.Header.Get("Content-Type") != "application/x-protobuf" || s.Header.Get("Content-Encoding") != "zstd" {
		t.Errorf("forward_backward: Content-Type %q, Content-Encoding %q; want application/x-protobuf, zstd",
			s.Header.Get("Content-Type"), s.Header.Get("Content-Encoding"))
		return
	}
	var m tinkerproto.ForwardBackwardRequest
	if err := tinkerproto.Unmarshal(s.Plain, &m); err != nil || len(m.GetData()) != 4 || m.GetSeqId() < 1 || m.GetLossFn() != "cross_entropy" {
		t.Errorf("forward_backward body does not decompress to the request: %v (%d datums)", err, len(m.GetData()))
	}
	if 2*len(s.Body) > len(s.Plain) {
		t.Errorf("forward_backward body %d bytes for %d uncompressed: not compressed", len(s.Body), len(s.Plain))
	}
}

// wireDatum is a supervised datum over text in the tiny byte vocabulary.
func wireDatum(text string) tinkerapi.Datum {
	seq := []int{models.TinyBOS}
	for _, b := range []byte(text) {
		seq = append(seq, int(b))
	}
	targets := make([]int64, len(seq)-1)
	weights := make([]float32, len(seq)-1)
	for i := range targets {
		targets[i], weights[i] = int64(seq[i+1]), 1
	}
	return tinkerapi.Datum{ModelInput: seq[:len(seq)-1],
		LossFnInputs: map[string]tinkerapi.Tensor{"target_tokens": tinkerapi.Int64s(targets), "weights": tinkerapi.Float32s(weights)}}
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestTelemetryAccepted: the local server takes the SDK's telemetry batch
// (tinker itself sends none: docs/compat.md, "Wire").
func TestTelemetryAccepted(t *testing.T) {
	e := newWireEnv(t)
	batch := map[string]any{"events": []any{map[string]any{"event": "SESSION_START", "event_id": "6f1c2a9e-0000-4000-8000-000000000001",
		"event_session_index": 0, "severity": "INFO", "timestamp": "2026-01-01T00:00:00Z"}},
		"platform": "Linux", "sdk_version": tinkerapi.SDKVersion, "session_id": e.sess.ID(), "process_uuid": "6f1c2a9e-0000-4000-8000-000000000002"}
	var out struct {
		Status string `json:"status"`
	}
	if err := e.c.Do(t.Context(), "POST", "/api/v1/telemetry", batch, &out); err != nil || out.Status != "accepted" {
		t.Errorf("telemetry = %+v, %v", out, err)
	}
	for _, ev := range e.proxy.take() {
		if ev.req != nil && ev.req.Path == "/api/v1/telemetry" && ev.req.Header.Get("X-Api-Key") == "" {
			t.Error("telemetry sent without a key")
		}
	}
}
