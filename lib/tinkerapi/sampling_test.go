package tinkerapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// sampleProtoFixture covers every SampleResponse decoding rule of
// docs/protocol.md, "Protobuf bodies".
func sampleProtoFixture() *tinkerproto.SampleResponse {
	nan := float32(math.NaN())
	pad := float32(tinkerproto.TopKPadLogprob)
	return &tinkerproto.SampleResponse{
		Sequences: []*tinkerproto.SampledSequence{
			{StopReason: tinkerproto.StopReason_STOP_REASON_LENGTH, Tokens: tinkerproto.PackInt32([]int{5, 6, 7}),
				Logprobs: tinkerproto.PackFloat32([]float32{-0.5, -1, -2})},
			{StopReason: tinkerproto.StopReason_STOP_REASON_STOP, Tokens: tinkerproto.PackInt32([]int{9})},
		},
		PromptLogprobs: tinkerproto.PackFloat32([]float32{nan, -1.5, -0.25}),
		TopkPromptLogprobs: &tinkerproto.TopkPromptLogprobs{
			K: 2, PromptLength: 3,
			TokenIds: tinkerproto.PackInt32([]int{0, 0, 11, 12, 13, 0}),
			Logprobs: tinkerproto.PackFloat32([]float32{pad, pad, -0.1, -2.5, -0.3, pad}),
		},
		PromptCacheHitTokens: 2,
	}
}

func checkFixtureDecoded(t *testing.T, r *SampleResponse) {
	t.Helper()
	if len(r.Sequences) != 2 {
		t.Fatalf("sequences %+v", r.Sequences)
	}
	s0, s1 := r.Sequences[0], r.Sequences[1]
	if fmt.Sprint(s0.Tokens) != "[5 6 7]" || fmt.Sprint(s0.Logprobs) != "[-0.5 -1 -2]" || s0.StopReason != "length" {
		t.Errorf("sequence 0 %+v", s0)
	}
	if fmt.Sprint(s1.Tokens) != "[9]" || s1.Logprobs != nil || s1.StopReason != "stop" {
		t.Errorf("sequence 1 %+v", s1)
	}
	if len(r.PromptLogprobs) != 3 || r.PromptLogprobs[0] != nil || *r.PromptLogprobs[1] != -1.5 || *r.PromptLogprobs[2] != -0.25 {
		t.Errorf("prompt logprobs %v", r.PromptLogprobs)
	}
	tk := r.TopKPromptLogprobs
	if len(tk) != 3 || tk[0] != nil || fmt.Sprint(tk[1]) != "[{11 -0.1} {12 -2.5}]" || fmt.Sprint(tk[2]) != "[{13 -0.3}]" {
		t.Errorf("top-k prompt logprobs %v", tk)
	}
}

func TestDecodeSampleProto(t *testing.T) {
	b, err := tinkerproto.Marshal(sampleProtoFixture())
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeSampleProto(b)
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureDecoded(t, r)
	if r.PromptCacheHitTokens != 2 {
		t.Errorf("cache hits %d", r.PromptCacheHitTokens)
	}

	bad := func(mut func(m *tinkerproto.SampleResponse), want string) {
		t.Helper()
		m := sampleProtoFixture()
		mut(m)
		b, _ := tinkerproto.Marshal(m)
		if _, err := DecodeSampleProto(b); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want error containing %q, got %v", want, err)
		}
	}
	bad(func(m *tinkerproto.SampleResponse) { m.Sequences[1].StopReason = 7 }, "unknown stop reason 7")
	bad(func(m *tinkerproto.SampleResponse) { m.Sequences[0].Tokens = m.Sequences[0].Tokens[:5] }, "not a multiple of 4")
	bad(func(m *tinkerproto.SampleResponse) { m.Sequences[0].Logprobs = m.Sequences[0].Logprobs[:4] }, "1 logprobs for 3 tokens")
	bad(func(m *tinkerproto.SampleResponse) { m.TopkPromptLogprobs.PromptLength = 4 }, "positions")
	if _, err := DecodeSampleProto([]byte{0xff, 0xff}); err == nil {
		t.Error("garbage decoded")
	}
}

func TestDecodeSampleJSON(t *testing.T) {
	body := `{"type":"sample","sequences":[
	  {"stop_reason":"length","tokens":[5,6,7],"logprobs":[-0.5,-1,-2]},
	  {"stop_reason":"stop","tokens":[9],"logprobs":null}],
	 "prompt_logprobs":[null,-1.5,-0.25],
	 "topk_prompt_logprobs":[null,[[11,-0.1],[12,-2.5]],[[13,-0.3]]]}`
	r, err := DecodeSampleJSON([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureDecoded(t, r)
	if _, err := DecodeSampleJSON([]byte(`{"sequences":[{"stop_reason":"eos","tokens":[1]}]}`)); err == nil || !strings.Contains(err.Error(), `unknown stop reason "eos"`) {
		t.Errorf("unknown stop reason: %v", err)
	}
	if _, err := DecodeSampleJSON([]byte(`{"type":"sample"}`)); !errors.Is(err, ErrInvalidSchema) {
		t.Errorf("missing sequences: %v", err)
	}
	if r, err := DecodeSampleJSON([]byte(`{"sequences":[],"prompt_logprobs":null}`)); err != nil || r.PromptLogprobs != nil || r.TopKPromptLogprobs != nil {
		t.Errorf("no logprobs: %+v %v", r, err)
	}
}

// sampleSession returns a session on a svc whose sample futures answer
// with the fixture, as protobuf when asked (or always JSON if legacy).
func sampleSession(t *testing.T, legacy bool, mod func(*SessionOptions)) (*svc, *Session) {
	s := newSvc(t)
	s.setOverride(func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool {
		if q.Path != "/api/v1/retrieve_future" || !strings.HasPrefix(fmt.Sprint(q.Body["request_id"]), "sa/") {
			return false
		}
		if legacy {
			writeJSON(w, 200, `{"type":"sample","sequences":[{"stop_reason":"stop","tokens":[4],"logprobs":[-0.5]}],"prompt_logprobs":null,"topk_prompt_logprobs":null}`)
			return true
		}
		protoReply(sampleProtoFixture())(w, r, n)
		return true
	})
	return s, fastSession(t, s, mod)
}

func TestSampleRequestAndProtoResult(t *testing.T) {
	s, sess := sampleSession(t, false, nil)
	seed := int64(42)
	req := SampleRequest{PromptTokens: []int{1, 2, 3}, NumSamples: 2, MaxTokens: 16, Temperature: 0.7, TopP: 0.9, TopK: 50,
		Seed: &seed, StopTokens: []int{0, 2}, PromptLogprobs: true, TopKPromptLogprobs: 2}
	res, err := sess.Sample(ctxT(t), "sess-1:sample:0", req)
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureDecoded(t, res)
	sub := s.requests("/api/v1/asample")
	if len(sub) != 1 {
		t.Fatalf("%d submissions", len(sub))
	}
	want := `{"num_samples":2,"prompt":{"chunks":[{"tokens":[1,2,3],"type":"encoded_text"}]},` +
		`"sampling_params":{"max_tokens":16,"seed":42,"stop":[0,2],"temperature":0.7,"top_k":50,"top_p":0.9},` +
		`"sampling_session_id":"sess-1:sample:0","seq_id":0,"prompt_logprobs":true,"topk_prompt_logprobs":2,"type":"sample"}`
	if sub[0].Raw != want {
		t.Errorf("asample body\n got %s\nwant %s", sub[0].Raw, want)
	}
	if sub[0].Header.Get("X-Tinker-Sampling-Backpressure") != "1" {
		t.Errorf("asample headers %v", sub[0].Header)
	}
	for _, q := range s.requests("/api/v1/retrieve_future") {
		if q.Header.Get("Accept") != "application/x-protobuf" || q.Header.Get("X-Tinker-Request-Type") != "Sample" {
			t.Errorf("poll headers %v", q.Header)
		}
	}

	// Defaults, and stop strings.
	req = NewSampleRequest([]int{7})
	req.StopStrings = []string{"\n\n"}
	if _, err := sess.Sample(ctxT(t), "sess-1:sample:0", req); err != nil {
		t.Fatal(err)
	}
	want = `{"num_samples":1,"prompt":{"chunks":[{"tokens":[7],"type":"encoded_text"}]},` +
		`"sampling_params":{"max_tokens":64,"stop":["\n\n"],"temperature":1.0,"top_k":-1,"top_p":1.0},` +
		`"sampling_session_id":"sess-1:sample:0","seq_id":1,"prompt_logprobs":false,"topk_prompt_logprobs":0,"type":"sample"}`
	if got := s.requests("/api/v1/asample")[1].Raw; got != want {
		t.Errorf("asample body\n got %s\nwant %s", got, want)
	}
}

func TestSampleLegacyJSONResult(t *testing.T) {
	_, sess := sampleSession(t, true, nil)
	res, err := sess.Sample(ctxT(t), "sess-1:sample:0", NewSampleRequest([]int{1}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sequences) != 1 || fmt.Sprint(res.Sequences[0].Tokens) != "[4]" || res.Sequences[0].StopReason != "stop" {
		t.Errorf("%+v", res)
	}
}

func TestSampleBackpressureResubmits(t *testing.T) {
	var mu sync.Mutex
	var states []State
	s, sess := sampleSession(t, false, func(o *SessionOptions) {
		o.Timings.Backpressure = time.Millisecond
		o.OnState = func(st State) {
			mu.Lock()
			states = append(states, st)
			mu.Unlock()
		}
	})
	base := s.override
	s.setOverride(func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool {
		if q.Path == "/api/v1/asample" && n <= 2 {
			writeJSON(w, 429, `{"detail":"sampler busy"}`)
			return true
		}
		return base(w, r, q, n)
	})
	if _, err := sess.Sample(ctxT(t), "sess-1:sample:0", NewSampleRequest([]int{1})); err != nil {
		t.Fatal(err)
	}
	sub := s.requests("/api/v1/asample")
	if len(sub) != 3 {
		t.Fatalf("%d submissions, want 3", len(sub))
	}
	for _, q := range sub {
		if q.Body["seq_id"] != 0.0 {
			t.Errorf("a rejected submission consumed a seq id: %s", q.Raw)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) == 0 || states[0].Status != StatusPaused || states[0].Reason != "sampler busy, resubmitting" || states[len(states)-1].Status != StatusDone {
		t.Errorf("states %+v", states)
	}
}

func TestSampleRetriesWithNewSeqID(t *testing.T) {
	s, sess := sampleSession(t, false, nil)
	base := s.override
	s.setOverride(func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool {
		switch {
		case q.Path == "/api/v1/retrieve_future" && q.Body["request_id"] == "sa/sess-1:sample:0/0":
			writeJSON(w, 410, `{"detail":"promise expired"}`)
			return true
		case q.Path == "/api/v1/asample" && n == 2:
			writeJSON(w, 503, `{"detail":"restarting"}`)
			return true
		}
		return base(w, r, q, n)
	})
	if _, err := sess.Sample(ctxT(t), "sess-1:sample:0", NewSampleRequest([]int{1})); err != nil {
		t.Fatal(err)
	}
	var seqs []any
	for _, q := range s.requests("/api/v1/asample") {
		seqs = append(seqs, q.Body["seq_id"])
	}
	// An expired future is sampled again under a new seq id; a submission
	// answered 503 is sent again as it was (the SDK's holder retry).
	if fmt.Sprint(seqs) != "[0 1 1]" {
		t.Errorf("seq ids of the submissions %v, want [0 1 1]", seqs)
	}
}

func TestSampleFailureIsNotRetried(t *testing.T) {
	s, sess := sampleSession(t, false, nil)
	s.setOverride(func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool {
		if q.Path == "/api/v1/retrieve_future" {
			writeJSON(w, 200, `{"error":"prompt too long for the context window","category":"user"}`)
			return true
		}
		return false
	})
	_, err := sess.Sample(ctxT(t), "sess-1:sample:0", NewSampleRequest([]int{1}))
	var rf *RequestFailedError
	if !errors.As(err, &rf) || rf.Category != "user" || !strings.Contains(err.Error(), "prompt too long") {
		t.Errorf("err %v", err)
	}
	if n := s.count("/api/v1/asample"); n != 1 {
		t.Errorf("%d submissions, want 1", n)
	}
	// A 4xx on submission is final too.
	s.setOverride(func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool {
		if q.Path == "/api/v1/asample" {
			writeJSON(w, 404, `{"detail":"Sampling session x not found"}`)
			return true
		}
		return false
	})
	_, err = sess.Sample(ctxT(t), "x", NewSampleRequest([]int{1}))
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || s.count("/api/v1/asample") != 2 {
		t.Errorf("err %v after %d submissions", err, s.count("/api/v1/asample"))
	}
}

func TestSampleRequestValidation(t *testing.T) {
	s, sess := sampleSession(t, false, nil)
	for _, tc := range []struct {
		mut  func(*SampleRequest)
		want string
	}{
		{func(r *SampleRequest) { r.PromptTokens = nil }, "no tokens"},
		{func(r *SampleRequest) { r.StopStrings, r.StopTokens = []string{"x"}, []int{1} }, "not both"},
		{func(r *SampleRequest) { r.MaxTokens = -1 }, "max_tokens"},
		{func(r *SampleRequest) { r.NumSamples = -1 }, "num_samples"},
		{func(r *SampleRequest) { r.TopP = 1.5 }, "top_p"},
		{func(r *SampleRequest) { r.Temperature = -1 }, "temperature"},
		{func(r *SampleRequest) { r.NumSamples = 0 }, "num_samples must be at least 1, got 0"},
		{func(r *SampleRequest) { r.Temperature = math.Inf(1) }, "temperature must be a finite number, at least 0, got +Inf"},
		{func(r *SampleRequest) { r.Temperature = math.NaN() }, "temperature must be a finite number"},
		{func(r *SampleRequest) { r.TopP = math.Inf(1) }, "top_p must be between 0 and 1"},
	} {
		req := NewSampleRequest([]int{1})
		tc.mut(&req)
		if _, err := sess.Sample(ctxT(t), "sess-1:sample:0", req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error containing %q, got %v", tc.want, err)
		}
	}
	if n := s.count("/api/v1/asample"); n != 0 {
		t.Errorf("%d submissions for invalid requests", n)
	}
}

func BenchmarkDecodeSampleProto(b *testing.B) {
	// 8 sequences of 256 tokens with logprobs, 512 prompt logprobs.
	toks := make([]int, 256)
	lps := make([]float32, 256)
	for i := range toks {
		toks[i], lps[i] = 1000+i, -float32(i)/100
	}
	m := &tinkerproto.SampleResponse{PromptLogprobs: tinkerproto.PackFloat32(make([]float32, 512))}
	for range 8 {
		m.Sequences = append(m.Sequences, &tinkerproto.SampledSequence{Tokens: tinkerproto.PackInt32(toks), Logprobs: tinkerproto.PackFloat32(lps)})
	}
	body, _ := tinkerproto.Marshal(m)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSampleProto(body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSampleCancelWhileWaiting(t *testing.T) {
	s, sess := sampleSession(t, false, nil)
	arrived := make(chan struct{}, 1)
	s.setOverride(func(w http.ResponseWriter, r *http.Request, q svcReq, n int) bool {
		if q.Path == "/api/v1/retrieve_future" {
			arrived <- struct{}{}
			<-r.Context().Done()
			return true
		}
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := sess.Sample(ctx, "sess-1:sample:0", NewSampleRequest([]int{1}))
		done <- err
	}()
	<-arrived
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	case <-time.After(promptly):
		t.Fatal("Sample did not return after cancellation")
	}
	if n := s.count("/api/v1/asample"); n != 1 {
		t.Errorf("%d submissions; a cancelled sample must not be resubmitted", n)
	}
	sess.Close()
}

func TestEncodeNonFinite(t *testing.T) {
	_, err := encodeBody(map[string]float64{"learning_rate": math.Inf(-1)})
	if err == nil || !strings.Contains(err.Error(), "the request holds -Inf, which JSON cannot carry") {
		t.Errorf("err = %v", err)
	}
}
