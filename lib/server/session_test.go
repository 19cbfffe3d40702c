package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tinkershell/tinker/lib/engine"
)

// poll retrieves a future until it is no longer try_again; it returns the
// number of try_again answers and the final body.
func (e *env) poll(reqID string, hdr ...string) (int, []byte, http.Header) {
	e.t.Helper()
	tries := 0
	for i := 0; i < 50; i++ {
		code, b, h := e.do("POST", "/api/v1/retrieve_future", map[string]any{"request_id": reqID, "allow_metadata_only": true}, hdr...)
		if code != 200 {
			e.t.Fatalf("retrieve_future = %d %s", code, b)
		}
		if strings.Contains(string(b), `"type":"try_again"`) {
			if !strings.Contains(string(b), `"queue_state":"active"`) {
				e.t.Errorf("try_again without queue_state: %s", b)
			}
			tries++
			continue
		}
		return tries, b, h
	}
	e.t.Fatal("future never completed")
	return 0, nil, nil
}

func (e *env) post(path string, body any, out any) {
	e.t.Helper()
	code, b, _ := e.do("POST", path, body)
	if code != 200 {
		e.t.Fatalf("POST %s = %d %s", path, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("POST %s: %v", path, err)
		}
	}
}

type fakeSampler struct{}

func (fakeSampler) Sample(ctx context.Context, req SampleRequest) (*engine.SampleResponse, error) {
	lp := float32(-0.5)
	return &engine.SampleResponse{
		Sequences:      []engine.Sequence{{Tokens: []int{req.Prompt[0] + 1, 257}, Logprobs: []float32{-1, -2}, StopReason: "stop"}},
		PromptLogprobs: []*float32{nil, &lp},
	}, nil
}

func TestSessionModelSaveSampleFlow(t *testing.T) {
	e := newEnv(t, "", Options{FutureDelay: 3 * time.Second, PollHold: 200 * time.Millisecond, Sampler: fakeSampler{}})
	var sess struct {
		SessionID string `json:"session_id"`
	}
	e.post("/api/v1/create_session", map[string]any{"tags": []string{}, "user_metadata": map[string]string{"k": "v"}, "sdk_version": "0.25.0", "type": "create_session"}, &sess)
	if len(sess.SessionID) != 36 {
		t.Fatalf("session id %q", sess.SessionID)
	}
	e.post("/api/v1/session_heartbeat", map[string]string{"session_id": sess.SessionID, "type": "session_heartbeat"}, nil)

	var fut struct {
		RequestID string `json:"request_id"`
		ModelID   string `json:"model_id"`
	}
	e.post("/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 0, "base_model": "tinker-local/tiny-qwen3",
		"lora_config": map[string]any{"rank": 8, "train_unembed": false, "train_mlp": true, "train_attn": true}, "type": "create_model"}, &fut)
	if fut.ModelID != sess.SessionID+":train:0" || !regexp.MustCompile(`^fut-[0-9a-f]{32}$`).MatchString(fut.RequestID) {
		t.Fatalf("create_model future = %+v", fut)
	}
	tries, b, _ := e.poll(fut.RequestID)
	if tries == 0 {
		t.Error("expected at least one try_again while the model is being created")
	}
	if string(b) != `{"model_id":"`+fut.ModelID+`","type":"create_model"}` {
		t.Errorf("create_model result = %s", b)
	}
	if code, _, _ := e.do("POST", "/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 1, "base_model": "nope/x", "lora_config": map[string]any{"rank": 8}}); code != 400 {
		t.Errorf("unknown base model = %d", code)
	}
	// A model of the current lineup the catalog cannot shape: one line saying what is missing.
	if code, body, _ := e.do("POST", "/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 1, "base_model": "Qwen/Qwen3.5-27B", "lora_config": map[string]any{"rank": 8}}); code != 400 || !strings.Contains(string(body), "Gated DeltaNet") {
		t.Errorf("lineup model outside the catalog = %d %s", code, body)
	}

	var info map[string]any
	e.post("/api/v1/get_info", map[string]string{"model_id": fut.ModelID, "type": "get_info"}, &info)
	if info["lora_rank"] != 8.0 || info["model_data"].(map[string]any)["model_name"] != "tinker-local/tiny-qwen3" {
		t.Errorf("get_info = %v", info)
	}

	e.srv.opts.FutureDelay = 10 * time.Millisecond
	e.post("/api/v1/save_weights_for_sampler", map[string]any{"model_id": fut.ModelID, "path": "final", "seq_id": 1, "type": "save_weights_for_sampler"}, &fut)
	_, b, _ = e.poll(fut.RequestID)
	var saved map[string]any
	json.Unmarshal(b, &saved)
	path := "tinker://" + sess.SessionID + ":train:0/sampler_weights/final"
	if saved["path"] != path {
		t.Fatalf("save result = %s", b)
	}
	// Saving the same name again fails as a user error.
	e.post("/api/v1/save_weights_for_sampler", map[string]any{"model_id": fut.ModelID, "path": "final", "seq_id": 2}, &fut)
	if _, b, _ = e.poll(fut.RequestID); !strings.Contains(string(b), `"category":"user"`) {
		t.Errorf("duplicate save = %s", b)
	}
	e.post("/api/v1/save_weights", map[string]any{"model_id": fut.ModelID, "path": "step1", "seq_id": 3, "overwrite": false, "ttl_seconds": 600}, &fut)
	if _, b, _ = e.poll(fut.RequestID); !strings.Contains(string(b), "/weights/step1") {
		t.Errorf("save_weights = %s", b)
	}
	var run map[string]any
	e.getJSON("/api/v1/training_runs/"+sess.SessionID+":train:0", 200, &run)
	lc := run["last_checkpoint"].(map[string]any)
	if lc["checkpoint_id"] != "weights/step1" || lc["expires_at"] != "2026-07-13T05:10:00.000000Z" {
		t.Errorf("last_checkpoint = %v", lc)
	}
	if run["user_metadata"] != nil {
		t.Errorf("user_metadata = %v", run["user_metadata"])
	}

	// Sampling session from the saved path; protobuf result when asked.
	var ss struct {
		ID string `json:"sampling_session_id"`
	}
	e.post("/api/v1/create_sampling_session", map[string]any{"session_id": sess.SessionID, "sampling_session_seq_id": 0, "model_path": path}, &ss)
	if ss.ID != sess.SessionID+":sample:0" {
		t.Fatalf("sampling session = %q", ss.ID)
	}
	var sampler map[string]any
	e.getJSON("/api/v1/samplers/"+strings.ReplaceAll(ss.ID, ":", "%3A"), 200, &sampler)
	if sampler["base_model"] != "tinker-local/tiny-qwen3" || sampler["model_path"] != path {
		t.Errorf("sampler = %v", sampler)
	}
	e.post("/api/v1/asample", map[string]any{"sampling_session_id": ss.ID, "seq_id": 0, "num_samples": 1,
		"prompt":          map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{72, 105}}}},
		"sampling_params": map[string]any{"max_tokens": 4, "temperature": 0}, "prompt_logprobs": true, "topk_prompt_logprobs": 0, "type": "sample"}, &fut)
	_, b, h := e.poll(fut.RequestID, "Accept", "application/x-protobuf")
	if h.Get("Content-Type") != "application/x-protobuf" {
		t.Fatalf("sample content type %q: %s", h.Get("Content-Type"), b)
	}
	toks, plp := decodeSample(t, b)
	if len(toks) != 2 || toks[0] != 73 || toks[1] != 257 || len(plp) != 2 || !math.IsNaN(float64(plp[0])) || plp[1] != -0.5 {
		t.Errorf("decoded sample tokens %v prompt logprobs %v", toks, plp)
	}

	// Session REST views.
	var sl struct {
		Sessions []string `json:"sessions"`
	}
	e.getJSON("/api/v1/sessions", 200, &sl)
	if len(sl.Sessions) != 1 || sl.Sessions[0] != sess.SessionID {
		t.Errorf("sessions = %v", sl)
	}
	var sg struct {
		Runs     []string `json:"training_run_ids"`
		Samplers []string `json:"sampler_ids"`
	}
	e.getJSON("/api/v1/sessions/"+sess.SessionID, 200, &sg)
	if len(sg.Runs) != 1 || len(sg.Samplers) != 1 {
		t.Errorf("session = %+v", sg)
	}
	if code, _, _ := e.do("PUT", "/api/v1/sessions/"+sess.SessionID+"/project", map[string]string{"project_id": "p1"}); code != 200 {
		t.Errorf("set project = %d", code)
	}
	for project, want := range map[string]string{"p1": `"total_count":1`, "p2": `"total_count":0`} {
		if code, b, _ := e.do("GET", "/api/v1/training_runs?project_id="+project, nil); code != 200 || !strings.Contains(string(b), want) {
			t.Errorf("runs in %s = %d %s", project, code, b)
		}
	}

	// Trace export: pending, then ready with a URL to Chrome-trace JSON.
	var tr struct {
		Status, URL string
	}
	e.getJSON("/api/v1/sessions/"+sess.SessionID+"/trace_export", 200, &tr)
	if tr.Status != "pending" {
		t.Errorf("first trace poll = %+v", tr)
	}
	e.srv.traces.wait()
	e.getJSON("/api/v1/sessions/"+sess.SessionID+"/trace_export", 200, &tr)
	if tr.Status != "ready" || tr.URL == "" {
		t.Fatalf("second trace poll = %+v", tr)
	}
	resp, err := http.Get(tr.URL)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var trace struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Ph   string `json:"ph"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(tb, &trace); err != nil {
		t.Fatalf("trace: %v", err)
	}
	var names []string
	for _, ev := range trace.TraceEvents {
		if ev.Ph == "X" {
			names = append(names, ev.Name)
		}
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "create_model") || !strings.Contains(got, "save_weights_for_sampler") || !strings.Contains(got, "sample") {
		t.Errorf("trace requests = %s", got)
	}

	// Billing: sampling tokens, checkpoints and storage in the window.
	var bill struct {
		Data []struct {
			BucketStart string         `json:"bucket_start"`
			SessionID   *string        `json:"session_id"`
			ProjectID   *string        `json:"project_id"`
			EventInfo   map[string]any `json:"event_info"`
		} `json:"data"`
		Sessions map[string]struct {
			UserMetadata map[string]string `json:"user_metadata"`
		} `json:"sessions"`
	}
	e.clk.Add(2 * time.Hour)
	e.getJSON("/api/v1/billing/usage/events?starting_on=2026-07-13T05:00:00Z&ending_before=2026-07-13T07:00:00Z", 200, &bill)
	kinds := map[string]bool{}
	for _, d := range bill.Data {
		kinds[d.EventInfo["type"].(string)] = true
		if d.BucketStart != "2026-07-13T05:00:00.000000Z" && d.BucketStart != "2026-07-13T06:00:00.000000Z" {
			t.Errorf("bucket %s", d.BucketStart)
		}
		if d.ProjectID == nil || *d.ProjectID != "p1" {
			t.Errorf("project_id = %v", d.ProjectID)
		}
	}
	for _, k := range []string{"sampling_prefill", "sampling_sample", "checkpoint", "storage"} {
		if !kinds[k] {
			t.Errorf("billing lacks %s: %v", k, kinds)
		}
	}
	if bill.Sessions[sess.SessionID].UserMetadata["k"] != "v" {
		t.Errorf("billing sessions = %v", bill.Sessions)
	}
	for _, q := range []string{
		"starting_on=2026-07-13T05:30:00Z&ending_before=2026-07-13T07:00:00Z",
		"starting_on=2026-07-01T00:00:00Z&ending_before=2026-07-16T00:00:00Z",
		"starting_on=2026-07-13T07:00:00Z&ending_before=2026-07-13T05:00:00Z",
		"starting_on=yesterday&ending_before=2026-07-13T05:00:00Z",
	} {
		if code, _, _ := e.do("GET", "/api/v1/billing/usage/events?"+q, nil); code != 400 {
			t.Errorf("billing %s = %d", q, code)
		}
	}
	// Naive date-times (what the CLI sends for dates) are UTC.
	e.getJSON("/api/v1/billing/usage/events?starting_on=2026-07-13T00:00:00&ending_before=2026-07-14T00:00:00", 200, nil)

	// Sessions expire after missed heartbeats.
	if code, _, _ := e.do("POST", "/api/v1/session_heartbeat", map[string]string{"session_id": sess.SessionID}); code != 410 {
		t.Errorf("heartbeat after 2h = %d", code)
	}
}

// decodeSample reads tinker_public.SampleResponse: first sequence's tokens
// and the prompt logprobs.
func decodeSample(t *testing.T, b []byte) ([]int32, []float32) {
	var toks []int32
	var plp []float32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		if typ != protowire.BytesType {
			t.Fatalf("unexpected wire type %v", typ)
		}
		v, n := protowire.ConsumeBytes(b)
		b = b[n:]
		switch num {
		case 1:
			for len(v) > 0 {
				fn, ft, n := protowire.ConsumeTag(v)
				v = v[n:]
				if ft == protowire.VarintType {
					_, n = protowire.ConsumeVarint(v)
					v = v[n:]
					continue
				}
				fv, n := protowire.ConsumeBytes(v)
				v = v[n:]
				if fn == 2 && toks == nil {
					for i := 0; i+4 <= len(fv); i += 4 {
						toks = append(toks, int32(binary.LittleEndian.Uint32(fv[i:])))
					}
				}
			}
		case 2:
			for i := 0; i+4 <= len(v); i += 4 {
				plp = append(plp, math.Float32frombits(binary.LittleEndian.Uint32(v[i:])))
			}
		}
	}
	return toks, plp
}
