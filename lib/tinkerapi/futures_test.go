package tinkerapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// pollReplyFn answers the n-th retrieve_future poll (n from 1).
type pollReplyFn func(w http.ResponseWriter, r *http.Request, n int)

func jsonReply(status int, body string) pollReplyFn {
	return func(w http.ResponseWriter, _ *http.Request, _ int) { writeJSON(w, status, body) }
}

func protoReply(m tinkerproto.Message) pollReplyFn {
	return func(w http.ResponseWriter, _ *http.Request, _ int) {
		b, _ := tinkerproto.Marshal(m)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}
}

const tryAgain = `{"type":"try_again","request_id":"req-1","queue_state":"active"}`

// futureServer answers polls from a script; the last reply repeats.
func futureServer(t *testing.T, replies ...pollReplyFn) *fake {
	return newFake(t, func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path != "/api/v1/retrieve_future" {
			return false
		}
		replies[min(n, len(replies))-1](w, r, n)
		return true
	})
}

// awaitRec is one Await run with its waits recorded instead of slept.
type awaitRec struct {
	err    error
	waits  []time.Duration
	states []State
}

func runAwait(t *testing.T, f *fake, out any, opts AwaitOptions) awaitRec {
	t.Helper()
	c, _ := testClient(t, f)
	var rec awaitRec
	var mu sync.Mutex
	opts.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		rec.waits = append(rec.waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	opts.OnState = func(s State) { rec.states = append(rec.states, s) }
	rec.err = c.Await(ctxT(t), "req-1", "SaveWeights", out, opts)
	return rec
}

// polls returns the decoded bodies of the retrieve_future requests.
func polls(t *testing.T, f *fake) ([]map[string]any, []recorded) {
	t.Helper()
	reqs := f.requests("/api/v1/retrieve_future")
	var bodies []map[string]any
	for _, r := range reqs {
		var m map[string]any
		if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
			t.Fatalf("poll body %q: %v", r.Body, err)
		}
		bodies = append(bodies, m)
	}
	return bodies, reqs
}

func statuses(states []State) string {
	var s []string
	for _, st := range states {
		s = append(s, st.Status)
	}
	return strings.Join(s, ",")
}

func TestAwaitTryAgainThenSuccess(t *testing.T) {
	f := futureServer(t,
		jsonReply(200, tryAgain),
		jsonReply(200, `{"type":"try_again","request_id":"req-1","queue_state":"paused_capacity","queue_state_reason":"waiting for GPU capacity"}`),
		jsonReply(200, `{"type":"try_again","request_id":"req-1","queue_state":"paused_capacity","queue_state_reason":"waiting for GPU capacity"}`),
		jsonReply(200, `{"type":"try_again","request_id":"req-1","queue_state":"brand_new_state"}`),
		jsonReply(200, `{"path":"tinker://r:train:0/weights/a","type":"save_weights"}`))
	var out struct{ Path string }
	rec := runAwait(t, f, &out, AwaitOptions{SubmittedAt: time.Now()})
	if rec.err != nil {
		t.Fatal(rec.err)
	}
	if out.Path != "tinker://r:train:0/weights/a" {
		t.Errorf("result %+v", out)
	}
	bodies, reqs := polls(t, f)
	if len(reqs) != 5 {
		t.Fatalf("%d polls, want 5", len(reqs))
	}
	for i, r := range reqs {
		if got := r.Header.Get("X-Tinker-Request-Iteration"); got != []string{"0", "1", "2", "3", "4"}[i] {
			t.Errorf("poll %d: iteration header %q", i, got)
		}
		if r.Header.Get("X-Tinker-Request-Type") != "SaveWeights" || r.Header.Get("Accept") != "application/json" {
			t.Errorf("poll %d headers: %v", i, r.Header)
		}
		if got := r.Header.Get("X-Stainless-Read-Timeout"); got != "45" {
			t.Errorf("poll %d: read timeout header %q, want 45", i, got)
		}
		if (r.Header.Get("X-Tinker-Create-Promise-Roundtrip-Time") != "") != (i == 0) {
			t.Errorf("poll %d: roundtrip header %q", i, r.Header.Get("X-Tinker-Create-Promise-Roundtrip-Time"))
		}
		if bodies[i]["request_id"] != "req-1" || bodies[i]["allow_metadata_only"] != true {
			t.Errorf("poll %d body %v", i, bodies[i])
		}
	}
	// Status changes only, in order; repeated paused polls are reported once.
	if got := statuses(rec.states); got != "queued,running,paused,running,done" {
		t.Errorf("states %s", got)
	}
	if p := rec.states[2]; p.QueueState != "paused_capacity" || p.Reason != "waiting for GPU capacity" || p.Kind != "SaveWeights" || p.RequestID != "req-1" {
		t.Errorf("paused state %+v", p)
	}
	if u := rec.states[3]; u.QueueState != "unknown" {
		t.Errorf("unknown queue state reported as %+v", u)
	}
	// Quick answers are paced by the small floor, never by a long backoff.
	for _, w := range rec.waits {
		if w > 250*time.Millisecond {
			t.Errorf("wait %s after try_again", w)
		}
	}
}

func TestAwait408AndServerErrorsPollAgain(t *testing.T) {
	f := futureServer(t,
		jsonReply(408, `{"type":"try_again","queue_state":"paused_rate_limit"}`),
		jsonReply(500, `{"detail":"boom"}`),
		jsonReply(503, `upstream unavailable`),
		jsonReply(200, `{"model_id":"m:train:0"}`))
	var out map[string]string
	rec := runAwait(t, f, &out, AwaitOptions{})
	if rec.err != nil || out["model_id"] != "m:train:0" {
		t.Fatalf("err %v out %v", rec.err, out)
	}
	if n := f.count("/api/v1/retrieve_future"); n != 4 {
		t.Errorf("%d polls, want 4", n)
	}
	if got := statuses(rec.states); got != "queued,paused,retrying,retrying,done" { // 500 then 503
		t.Errorf("states %s", got)
	}
	for _, w := range rec.waits {
		if w > 250*time.Millisecond {
			t.Errorf("5xx/408 waited %s; they poll again at once", w)
		}
	}
}

func TestAwait410IsExpired(t *testing.T) {
	f := futureServer(t, jsonReply(200, tryAgain), jsonReply(410, `{"detail":"Promise expired"}`))
	rec := runAwait(t, f, nil, AwaitOptions{})
	var exp *FutureExpiredError
	if !errors.Is(rec.err, ErrFutureExpired) || !errors.As(rec.err, &exp) || exp.RequestID != "req-1" || exp.Kind != "SaveWeights" {
		t.Fatalf("err %v, want *FutureExpiredError", rec.err)
	}
	if !strings.Contains(rec.err.Error(), "submit it again") {
		t.Errorf("message %q", rec.err)
	}
}

func TestAwait429BacksOffExponentially(t *testing.T) {
	f := futureServer(t,
		jsonReply(429, `{"detail":"slow"}`), jsonReply(429, `{"detail":"slow"}`), jsonReply(429, `{"detail":"slow"}`),
		jsonReply(429, `{"detail":"slow"}`), jsonReply(429, `{"detail":"slow"}`), jsonReply(429, `{"detail":"slow"}`),
		jsonReply(200, tryAgain), jsonReply(429, `{"detail":"slow"}`),
		jsonReply(200, `{}`))
	rec := runAwait(t, f, nil, AwaitOptions{})
	if rec.err != nil {
		t.Fatal(rec.err)
	}
	var backoffs []time.Duration
	for _, w := range rec.waits {
		if w >= time.Second {
			backoffs = append(backoffs, w)
		}
	}
	// min(2^n, 30) s after n earlier consecutive 429s, as the SDK waits
	// (1 s, then 2 s, …); a try_again resets n.
	want := []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 1 * time.Second}
	if len(backoffs) != len(want) {
		t.Fatalf("backoffs %v, want %v", backoffs, want)
	}
	for i := range want {
		if backoffs[i] != want[i] {
			t.Errorf("backoff %d = %s, want %s", i, backoffs[i], want[i])
		}
	}
}

func TestAwait400RetriedThreeTimes(t *testing.T) {
	bad := jsonReply(400, `{"detail":"bad"}`)
	t.Run("then success", func(t *testing.T) {
		f := futureServer(t, bad, bad, bad, jsonReply(200, `{}`))
		if rec := runAwait(t, f, nil, AwaitOptions{}); rec.err != nil {
			t.Fatal(rec.err)
		}
	})
	t.Run("fourth fails", func(t *testing.T) {
		f := futureServer(t, bad, bad, bad, bad, jsonReply(200, `{}`))
		rec := runAwait(t, f, nil, AwaitOptions{})
		var apiErr *APIError
		if !errors.As(rec.err, &apiErr) || apiErr.Status != 400 {
			t.Fatalf("err %v, want a 400 APIError", rec.err)
		}
		if n := f.count("/api/v1/retrieve_future"); n != 4 {
			t.Errorf("%d polls, want 4", n)
		}
	})
	t.Run("408 with JSON resets the budget", func(t *testing.T) {
		f := futureServer(t, bad, bad, bad, jsonReply(408, `{"type":"try_again"}`), bad, bad, bad, jsonReply(200, `{}`))
		if rec := runAwait(t, f, nil, AwaitOptions{}); rec.err != nil {
			t.Fatal(rec.err)
		}
	})
}

func TestAwait507IsFinal(t *testing.T) {
	f := futureServer(t, jsonReply(507, `{"detail":"disk full"}`), jsonReply(200, `{}`))
	rec := runAwait(t, f, nil, AwaitOptions{})
	var apiErr *APIError
	if !errors.As(rec.err, &apiErr) || apiErr.Status != 507 {
		t.Fatalf("err %v, want a 507 APIError", rec.err)
	}
	if n := f.count("/api/v1/retrieve_future"); n != 1 {
		t.Errorf("%d polls, want 1", n)
	}
}

func TestAwait402PausesThenFails(t *testing.T) {
	hold := jsonReply(402, `{"detail":"billing hold"}`)
	f := futureServer(t, hold, hold, jsonReply(200, `{}`))
	rec := runAwait(t, f, nil, AwaitOptions{})
	if rec.err != nil {
		t.Fatal(rec.err)
	}
	if len(rec.waits) < 2 || rec.waits[0] != 5*time.Second || rec.waits[1] != 5*time.Second {
		t.Errorf("waits %v, want two 5s billing pauses", rec.waits)
	}
	if got := statuses(rec.states); got != "queued,paused,done" {
		t.Errorf("states %s", got)
	}

	f = futureServer(t, hold)
	rec = runAwait(t, f, nil, AwaitOptions{Timings: PollTimings{BillingMax: time.Nanosecond}})
	var apiErr *APIError
	if !errors.As(rec.err, &apiErr) || apiErr.Status != 402 || !strings.Contains(rec.err.Error(), "billing hold") {
		t.Fatalf("err %v, want a 402 after the billing window", rec.err)
	}
}

func TestAwaitOther4xxIsFatal(t *testing.T) {
	for _, status := range []int{401, 403, 404, 409, 422} {
		f := futureServer(t, jsonReply(status, `{"detail":"no"}`), jsonReply(200, `{}`))
		rec := runAwait(t, f, nil, AwaitOptions{})
		var apiErr *APIError
		if !errors.As(rec.err, &apiErr) || apiErr.Status != status {
			t.Errorf("%d: err %v", status, rec.err)
		}
		if n := f.count("/api/v1/retrieve_future"); n != 1 {
			t.Errorf("%d: %d polls, want 1", status, n)
		}
	}
}

func TestAwaitFailedRequest(t *testing.T) {
	for _, tc := range []struct{ body, msg, cat string }{
		{`{"error":"Checkpoint name already exists","category":"user"}`, "Checkpoint name already exists", "user"},
		{`{"error":"oom","category":"Server"}`, "oom", "server"},
		{`{"error":{"code":7}}`, `{"code":7}`, "unknown"},
	} {
		f := futureServer(t, jsonReply(200, tc.body))
		rec := runAwait(t, f, nil, AwaitOptions{})
		var rf *RequestFailedError
		if !errors.As(rec.err, &rf) || rf.Message != tc.msg || rf.Category != tc.cat || rf.RequestID != "req-1" {
			t.Errorf("%s: err %#v", tc.body, rec.err)
			continue
		}
		if got := rec.err.Error(); got != tc.msg {
			t.Errorf("message %q", got)
		}
	}
	// "error": null is not a failure, and results may use the steering
	// keys with other types.
	for _, body := range []string{`{"path":"p","error":null}`, `{"status":3,"type":["x"],"path":"p"}`} {
		var out struct{ Path string }
		if rec := runAwait(t, futureServer(t, jsonReply(200, body)), &out, AwaitOptions{}); rec.err != nil || out.Path != "p" {
			t.Errorf("%s: %v %+v", body, rec.err, out)
		}
	}
}

func TestAwaitCompleteMetadataHandshake(t *testing.T) {
	f := futureServer(t, jsonReply(200, tryAgain),
		jsonReply(200, `{"status":"complete_metadata","response_payload_size":73400320}`),
		jsonReply(200, `{"path":"x"}`))
	if rec := runAwait(t, f, nil, AwaitOptions{}); rec.err != nil {
		t.Fatal(rec.err)
	}
	bodies, _ := polls(t, f)
	if len(bodies) != 3 || bodies[0]["allow_metadata_only"] != true || bodies[1]["allow_metadata_only"] != true || bodies[2]["allow_metadata_only"] != false {
		t.Errorf("allow_metadata_only sequence: %v", bodies)
	}

	f = futureServer(t, jsonReply(200, `{"status":"complete_metadata","response_payload_size":10}`))
	if rec := runAwait(t, f, nil, AwaitOptions{}); !errors.Is(rec.err, ErrInvalidSchema) || f.count("/api/v1/retrieve_future") != 2 {
		t.Errorf("repeated complete_metadata: %v after %d polls", rec.err, f.count("/api/v1/retrieve_future"))
	}
	f = futureServer(t, jsonReply(200, `{"status":"complete_metadata","response_payload_size":1099511627776}`))
	if rec := runAwait(t, f, nil, AwaitOptions{}); rec.err == nil || !strings.Contains(rec.err.Error(), "larger than this client accepts") {
		t.Errorf("1 TiB result: %v", rec.err)
	}
}

func TestAwaitProtoAndJSONResults(t *testing.T) {
	want := &tinkerproto.SampleResponse{PromptCacheHitTokens: 3, Sequences: []*tinkerproto.SampledSequence{
		{StopReason: tinkerproto.StopReason_STOP_REASON_LENGTH, Tokens: tinkerproto.PackInt32([]int{1, 2})}}}
	f := futureServer(t, jsonReply(200, tryAgain), protoReply(want))
	var got tinkerproto.SampleResponse
	if rec := runAwait(t, f, &got, AwaitOptions{Proto: true}); rec.err != nil {
		t.Fatal(rec.err)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("got %v, want %v", &got, want)
	}
	for _, r := range f.requests("/api/v1/retrieve_future") {
		if r.Header.Get("Accept") != "application/x-protobuf" {
			t.Errorf("Accept %q", r.Header.Get("Accept"))
		}
	}

	// Both forms into a FutureResult.
	var raw FutureResult
	if rec := runAwait(t, futureServer(t, protoReply(want)), &raw, AwaitOptions{Proto: true}); rec.err != nil || !raw.Proto {
		t.Errorf("proto into FutureResult: %v %+v", rec.err, raw)
	}
	if rec := runAwait(t, futureServer(t, jsonReply(200, `{"sequences":[]}`)), &raw, AwaitOptions{Proto: true}); rec.err != nil || raw.Proto || string(raw.Body) != `{"sequences":[]}` {
		t.Errorf("JSON into FutureResult: %v %+v", rec.err, raw)
	}
	// Mismatched forms are errors, not silent zero values.
	if rec := runAwait(t, futureServer(t, jsonReply(200, `{"sequences":[]}`)), &got, AwaitOptions{Proto: true}); rec.err == nil {
		t.Error("JSON decoded into a proto message without error")
	}
	var m map[string]any
	if rec := runAwait(t, futureServer(t, protoReply(want)), &m, AwaitOptions{}); rec.err == nil {
		t.Error("protobuf decoded as JSON without error")
	}
	if rec := runAwait(t, futureServer(t, jsonReply(200, `not json`)), &m, AwaitOptions{}); !errors.Is(rec.err, ErrInvalidSchema) {
		t.Errorf("garbage answer: %v", rec.err)
	}
}

func TestAwaitConnectionErrorBacksOff(t *testing.T) {
	truncated := func(w http.ResponseWriter, _ *http.Request, _ int) {
		// Promise a longer body than is sent, then drop the connection.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(200)
		w.Write([]byte(`{"type":`))
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	f := futureServer(t, truncated, truncated, jsonReply(200, `{}`))
	rec := runAwait(t, f, nil, AwaitOptions{})
	if rec.err != nil {
		t.Fatal(rec.err)
	}
	if len(rec.waits) < 2 || rec.waits[0] != 1*time.Second || rec.waits[1] != 2*time.Second {
		t.Errorf("waits %v, want 1s then 2s", rec.waits)
	}
	if got := statuses(rec.states); got != "queued,retrying,done" {
		t.Errorf("states %s", got)
	}
}

func TestAwaitCancelDuringLongPoll(t *testing.T) {
	arrived := make(chan struct{}, 1)
	f := futureServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		arrived <- struct{}{}
		<-r.Context().Done() // hold the poll until the client goes away
	})
	c, _ := testClient(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Await(ctx, "req-1", "Sample", nil, AwaitOptions{Proto: true}) }()
	<-arrived
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v, want context.Canceled", err)
		}
	case <-time.After(promptly):
		t.Fatal("Await did not return after cancellation")
	}
}

func TestStateString(t *testing.T) {
	s := State{Kind: "Sample", Status: StatusPaused, Reason: "waiting for GPU capacity", Elapsed: 3500 * time.Millisecond}
	if got := s.String(); got != "Sample: paused (waiting for GPU capacity) 3s" {
		t.Errorf("%q", got)
	}
	if got := (State{Status: StatusQueued}).String(); got != "queued" {
		t.Errorf("%q", got)
	}
}

func TestAwaitCancelDuringQueueStall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := futureServer(t, func(w http.ResponseWriter, _ *http.Request, n int) {
		if n == 5 {
			cancel() // Ctrl-C while the queue is paused
		}
		writeJSON(w, 200, `{"type":"try_again","queue_state":"paused_capacity"}`)
	})
	c, _ := testClient(t, f)
	err := c.Await(ctx, "req-1", "CreateModel", nil, AwaitOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if msg, _ := CLIError(err); msg != "Aborted!" {
		t.Errorf("CLI message %q", msg)
	}
	if n := f.count("/api/v1/retrieve_future"); n != 5 {
		t.Errorf("%d polls after cancellation at the 5th", n)
	}
}

// The live status line keeps its own clock: the label it shows must not
// carry the state's elapsed time too ("Sample: running 2s 2s").
func TestStateLabelHasNoElapsed(t *testing.T) {
	s := State{Kind: "Sample", Status: StatusRunning, Elapsed: 2500 * time.Millisecond}
	if got := s.Label(); got != "Sample: running" {
		t.Errorf("Label() = %q", got)
	}
	if got := s.String(); got != "Sample: running 2s" {
		t.Errorf("String() = %q", got)
	}
}

// TestAwaitStopsWhenServerGone: a client waiting without a deadline (a
// training loop finishing its steps after Ctrl-C) whose server is gone
// for good (connections refused) gives up after about 30 s of waiting
// instead of polling forever; the error says what happened.
func TestAwaitStopsWhenServerGone(t *testing.T) {
	f := futureServer(t, jsonReply(200, `{}`))
	c, _ := testClient(t, f)
	if _, err := c.ServerConfig(ctxT(t)); err != nil { // the handshake is done
		t.Fatal(err)
	}
	f.srv.Close() // nothing listens any more
	var waits []time.Duration
	errTooMany := errors.New("still polling after 50 waits")
	opts := AwaitOptions{sleep: func(ctx context.Context, d time.Duration) error {
		if waits = append(waits, d); len(waits) > 50 {
			return errTooMany
		}
		return nil
	}}
	err := c.Await(context.Background(), "req-1", "SaveWeights", nil, opts)
	if errors.Is(err, errTooMany) || err == nil || !strings.Contains(err.Error(), "refused connections") {
		t.Fatalf("Await against a gone server: %v after waits %v", err, waits)
	}
	var total time.Duration
	for _, w := range waits {
		total += w
	}
	if total < 30*time.Second || total > 70*time.Second {
		t.Errorf("gave up after waiting %v (%v), want about 30 s", total, waits)
	}
}
