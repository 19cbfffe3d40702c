package server

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// cpuTime is the CPU time this process (the server included) has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// longSample is 64 sequences of up to 2040 tokens on tiny-llama: far more
// CPU than the abandon grace even with the vector kernels (8 sequences
// finished within the default 4s, so the interrupt test found nothing to
// cancel; it now also shortens the grace).
var longSample = tinkerapi.SampleRequest{PromptTokens: []int{256, 'H', 'i'}, NumSamples: 64, MaxTokens: 2040, Temperature: 1, TopP: 1, TopK: -1}

// waitSamples waits until no sample runs on the server, or d passes.
func waitSamples(e *env, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if e.srv.samples.Load() == 0 {
			return true
		}
	}
	return false
}

// TestInterruptedSampleStopsWork: a client interrupted while it waits for
// a long sample (its context cancelled, as Ctrl-C does) stops polling; the
// server cancels the sample once no poll follows, so the CPU it burns
// after the interrupt is bounded by the abandon grace, not by the sample's
// length. The session stays usable.
func TestInterruptedSampleStopsWork(t *testing.T) {
	const grace = time.Second
	e := newTrainEnv(t, Options{AbandonGrace: grace})
	ss, err := e.sess.CreateSamplingSession(t.Context(), "tinker-local/tiny-llama", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, interrupt := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := e.sess.Sample(ctx, ss, longSample); done <- err }()
	for e.srv.samples.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the engine is sampling
	interrupt()
	if err := <-done; err == nil {
		t.Fatal("interrupted Sample returned no error")
	}
	cpu0, t0 := cpuTime(t), time.Now()
	if !waitSamples(e.env, 60*time.Second) {
		t.Fatalf("the sample still runs %v after its client was interrupted", time.Since(t0).Round(time.Second))
	}
	// Until the grace passes the work may use both cores; then it stops.
	if used, bound := cpuTime(t)-cpu0, 2*(grace+time.Second); used > bound {
		t.Errorf("the server used %v of CPU after the interrupt, more than %v", used, bound)
	}
	if got := failures(e.srv); !strings.Contains(got, "sample cancelled: its client stopped waiting") {
		t.Errorf("the interrupted sample was not cancelled; its future answered %q", got)
	}
	small := tinkerapi.NewSampleRequest([]int{256, 'H'})
	small.MaxTokens = 2
	if _, err := e.sess.Sample(t.Context(), ss, small); err != nil {
		t.Errorf("the session after an interrupt: %v", err)
	}
}

// TestDeadSessionStopsWork: a session that stops heartbeating has its
// running sample cancelled, and the future says why.
func TestDeadSessionStopsWork(t *testing.T) {
	e := newTrainEnv(t, Options{})
	reqID := e.longSessionSample()
	time.Sleep(300 * time.Millisecond)
	e.clk.Add(e.srv.opts.HeartbeatTimeout + time.Second)
	if !waitSamples(e.env, 30*time.Second) {
		t.Fatal("the sample of a session that stopped heartbeating still runs")
	}
	_, b, _ := e.poll(reqID)
	if !strings.Contains(string(b), "sample cancelled: its client stopped waiting") || !strings.Contains(string(b), `"category":"user"`) {
		t.Errorf("future = %.300s, want a user error saying the sample was cancelled", b)
	}
}

// failures joins the failures of the server's finished futures.
func failures(s *Server) string {
	s.futures.mu.Lock()
	defer s.futures.mu.Unlock()
	var out []string
	for _, f := range s.futures.m {
		if f.finished() {
			out = append(out, string(f.failure))
		}
	}
	return strings.Join(out, "\n")
}

// TestInterruptedTrainingStaysConsistent: a client pipelines a long
// forward_backward and its optim_step, then is interrupted while waiting.
// The server cancels both: the forward_backward before it touches the
// gradients, and the optim_step never runs without them. The model then
// trains on as if the interrupted step had never been sent.
func TestInterruptedTrainingStaysConsistent(t *testing.T) {
	e := newTrainEnv(t, Options{})
	tc, err := e.sess.CreateTrainingClient(t.Context(), models.TinyLlama, tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(1)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var long []tinkerapi.Datum
	for range 24 {
		long = append(long, sft("", strings.Repeat("the quick brown fox jumps over the lazy dog. ", 40)))
	}
	ctx, interrupt := context.WithCancel(t.Context())
	fb, err := tc.ForwardBackwardAsync(ctx, tinkerapi.ForwardBackwardInput{Data: long, LossFn: "cross_entropy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.OptimStepAsync(ctx, tinkerapi.DefaultAdamParams()); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { _, err := fb.Wait(ctx); waited <- err }()
	time.Sleep(500 * time.Millisecond) // the pass is running
	interrupt()
	<-waited
	if !waitFutures(e.srv, 30*time.Second) {
		t.Fatalf("the interrupted training is still running; finished: %s", failures(e.srv))
	}
	got := failures(e.srv)
	if !strings.Contains(got, "forward_backward on "+tc.ModelID()+" cancelled") || !strings.Contains(got, "optim_step on "+tc.ModelID()+" cancelled") {
		t.Errorf("both operations should have been cancelled; failures: %s", got)
	}
	tr := e.srv.trainers.model(tc.ModelID()).tr
	if tr.Step() != 0 {
		t.Errorf("an optimizer step ran after its forward_backward was cancelled (step %d)", tr.Step())
	}
	e.step(tc, []tinkerapi.Datum{sft("Hi", " there")}, 1e-3)
	if tr.Step() != 1 {
		t.Errorf("after the interrupt, training goes on: step = %d, want 1", tr.Step())
	}
}

// waitFutures waits until every future on the server has finished.
func waitFutures(s *Server, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		s.futures.mu.Lock()
		busy := false
		for _, f := range s.futures.m {
			busy = busy || !f.finished()
		}
		s.futures.mu.Unlock()
		if !busy {
			return true
		}
	}
	return false
}

// TestAbandonedSessionlessSample: an asample outside any session (by
// base_model) whose client polled once, then hung up and never came back,
// is cancelled alone.
func TestAbandonedSessionlessSample(t *testing.T) {
	// A short grace and 64 long samples: the work must outlast the grace
	// however fast the engine is.
	e := newTrainEnv(t, Options{AbandonGrace: time.Second})
	var sub struct {
		RequestID string `json:"request_id"`
	}
	e.post("/api/v1/asample", map[string]any{"base_model": "tinker-local/tiny-llama", "num_samples": 64,
		"prompt":          map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{256, 'H', 'i'}}}},
		"sampling_params": map[string]any{"max_tokens": 2040, "temperature": 1}}, &sub)
	ctx, hangUp := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer hangUp()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/api/v1/retrieve_future", strings.NewReader(`{"request_id":"`+sub.RequestID+`"}`))
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the poll was answered (%d) before the client hung up", resp.StatusCode)
	}
	if !waitSamples(e.env, 30*time.Second) {
		t.Fatal("the abandoned sample still runs")
	}
	if _, b, _ := e.poll(sub.RequestID); !strings.Contains(string(b), "sample cancelled") {
		t.Errorf("future = %.300s, want it cancelled", b)
	}
}

// TestLiveSessionKeepsWork: a client that polled a session's long sample
// once, then left a gap far longer than the abandon grace (a busy machine,
// a 429 backoff) while its session stays alive, keeps its work; the old
// rule cancelled it after 4 s without a poll. cancel_future then stops it
// at once, saying why.
func TestLiveSessionKeepsWork(t *testing.T) {
	e := newTrainEnv(t, Options{AbandonGrace: 200 * time.Millisecond})
	reqID := e.longSessionSample()
	if code, b, _ := e.do("POST", "/api/v1/retrieve_future", map[string]any{"request_id": reqID}); code != 200 || !strings.Contains(string(b), "try_again") {
		t.Fatalf("first poll = %d %.200s, want try_again", code, b)
	}
	time.Sleep(time.Second) // five graces without a poll
	if e.srv.samples.Load() == 0 {
		t.Fatalf("the sample of a live session was dropped after a gap between polls: %s", failures(e.srv))
	}
	var out map[string]bool
	e.post("/api/v1/cancel_future", map[string]any{"request_id": reqID}, &out)
	if !out["cancelled"] {
		t.Errorf("cancel_future = %v, want cancelled", out)
	}
	if !waitSamples(e.env, 30*time.Second) {
		t.Fatal("the cancelled sample still runs")
	}
	if _, b, _ := e.poll(reqID); !strings.Contains(string(b), "sample cancelled: its client stopped waiting") {
		t.Errorf("future = %.300s, want it cancelled", b)
	}
}

// longSessionSample submits, on a new session, 64 long samples: more work
// than any of these tests waits, however fast the engine. It returns the
// future's id.
func (e *trainEnv) longSessionSample() string {
	sess := e.newSession()
	var ss struct {
		ID string `json:"sampling_session_id"`
	}
	e.post("/api/v1/create_sampling_session", map[string]any{"session_id": sess.SessionID, "sampling_session_seq_id": 0, "base_model": "tinker-local/tiny-llama"}, &ss)
	var sub struct {
		RequestID string `json:"request_id"`
	}
	e.post("/api/v1/asample", map[string]any{"sampling_session_id": ss.ID, "seq_id": 0, "num_samples": 64,
		"prompt":          map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{256, 'H', 'i'}}}},
		"sampling_params": map[string]any{"max_tokens": 2040, "temperature": 1}}, &sub)
	return sub.RequestID
}
