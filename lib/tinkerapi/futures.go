package tinkerapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// Statuses reported to an OnState callback while a future is awaited.
const (
	StatusQueued   = "queued"   // submitted, no word from the server yet
	StatusRunning  = "running"  // the server answered try_again from an active queue
	StatusPaused   = "paused"   // the server paused the queue (capacity, rate limit, billing)
	StatusRetrying = "retrying" // the client is waiting after an error (5xx, 429, connection)
	StatusDone     = "done"     // the result arrived
)

// State is the progress of one awaited future, for a live status line.
type State struct {
	RequestID string
	Kind      string // X-Tinker-Request-Type: CreateModel, SaveWeightsForSampler, Sample, ...
	Status    string // one of the Status* constants
	// QueueState is the server's queue_state (active, paused_capacity,
	// paused_rate_limit, or "unknown" for values this client does not know).
	QueueState string
	Reason     string // queue_state_reason, or why the client is waiting
	Polls      int    // retrieve_future requests sent so far
	Elapsed    time.Duration
}

// String renders a one-line status such as "Sample: paused (waiting for GPU capacity) 3s".
func (s State) String() string {
	if s.Elapsed >= time.Second {
		return s.Label() + " " + s.Elapsed.Truncate(time.Second).String()
	}
	return s.Label()
}

// Label is String without the elapsed time, for a live status line that
// keeps its own clock (the State is reported only when it changes, so its
// Elapsed is stale by the next redraw).
func (s State) Label() string {
	var b strings.Builder
	if s.Kind != "" {
		b.WriteString(s.Kind)
		b.WriteString(": ")
	}
	b.WriteString(s.Status)
	if s.Reason != "" {
		b.WriteString(" (")
		b.WriteString(s.Reason)
		b.WriteString(")")
	}
	return b.String()
}

// PollTimings tunes the waits of Await and of the sampling calls. Zero
// fields take the defaults noted; tests shorten them.
type PollTimings struct {
	PollTimeout  time.Duration // per retrieve_future request; default 45 s
	FloorMin     time.Duration // floor between polls that return quickly; default 50 ms
	FloorMax     time.Duration // the floor doubles up to this; default 250 ms
	BackoffUnit  time.Duration // 429/connection backoff is min(unit·2^n, BackoffMax), n from 0; default 1 s
	BackoffMax   time.Duration // default 30 s
	BillingPause time.Duration // wait after a 402; default 5 s
	BillingMax   time.Duration // give up 402s after this long; default 1 h
	Backpressure time.Duration // wait after an asample 429; 5× for prompts > 128 KiB; default 1 s
}

func (t PollTimings) withDefaults() PollTimings {
	setDefault(&t.PollTimeout, 45*time.Second)
	setDefault(&t.FloorMin, 50*time.Millisecond)
	setDefault(&t.FloorMax, 250*time.Millisecond)
	setDefault(&t.BackoffUnit, time.Second)
	setDefault(&t.BackoffMax, 30*time.Second)
	setDefault(&t.BillingPause, 5*time.Second)
	setDefault(&t.BillingMax, time.Hour)
	setDefault(&t.Backpressure, time.Second)
	return t
}

// backoff is min(unit·2^n, max) after n earlier consecutive failures:
// 1 s, 2 s, 4 s, … as the SDK waits.
func (t PollTimings) backoff(n int) time.Duration {
	d := t.BackoffUnit << min(n, 30)
	if d <= 0 || d > t.BackoffMax {
		d = t.BackoffMax
	}
	return d
}

// AwaitOptions adjusts one Await.
type AwaitOptions struct {
	// Proto asks for a protobuf result (Accept: application/x-protobuf),
	// as for sample and forward/backward futures.
	Proto bool
	// OnState, when set, is called on each change of status, queue state
	// or reason, and once with StatusDone on success. It runs on the
	// awaiting goroutine and must not block.
	OnState func(State)
	// SubmittedAt, when set, is reported on the first poll as
	// X-Tinker-Create-Promise-Roundtrip-Time.
	SubmittedAt time.Time
	Timings     PollTimings
	// NumericID sends the request id back as a JSON number, as a backend
	// that numbers its futures gave it.
	NumericID bool

	sleep func(ctx context.Context, d time.Duration) error // tests record waits
}

// FutureResult receives a raw future result, for callers that accept both
// a protobuf and a JSON form (Await's out may be a *FutureResult).
type FutureResult struct {
	Proto bool // the body is protobuf (Content-Type application/x-protobuf)
	Body  []byte
}

// RequestFailedError is a future that completed with {"error", "category"}:
// the operation ran and failed. It is not retried.
type RequestFailedError struct {
	RequestID string
	Kind      string
	Message   string
	Category  string // "user", "server" or "unknown"
}

// Error is the server's message; callers add what was being done.
func (e *RequestFailedError) Error() string { return e.Message }

// ErrFutureExpired matches a *FutureExpiredError.
var ErrFutureExpired = errors.New("future expired")

// FutureExpiredError is a 410 from retrieve_future: the server lost the
// promise, and the original request must be submitted again.
type FutureExpiredError struct {
	RequestID string
	Kind      string
}

func (e *FutureExpiredError) Error() string {
	return fmt.Sprintf("%s request %s expired on the server before its result was fetched; submit it again", e.Kind, e.RequestID)
}

func (e *FutureExpiredError) Is(target error) bool { return target == ErrFutureExpired }

// futureHandle is the submission answer of a future-returning call
// (UntypedAPIFuture).
type futureHandle struct {
	RequestID string `json:"request_id"`
	ModelID   string `json:"model_id,omitempty"`
	numeric   bool   // the server sent request_id as a number (backends.go)
}

// Await polls retrieve_future for requestID until the result arrives and
// decodes it into out: nil (discarded), *FutureResult, a tinkerproto.Message for
// a protobuf result, or any other value for a JSON result. kind is the
// X-Tinker-Request-Type header (CreateModel, SaveWeights, Sample, ...).
// It follows docs/protocol.md, "Futures": try_again and 408 are
// polled again at once (a server that does not hold polls open gets a
// 50–250 ms floor), 5xx likewise, 429 and connection errors back off up to
// 30 s (a 429's Retry-After wins), 400 is tried up to 3 more times, 402
// pauses up to an hour, 410 returns a *FutureExpiredError, other 4xx
// fail, and a failed operation returns a *RequestFailedError. There is no
// overall deadline: cancel ctx, which also stops the operation on a
// server that takes cancel_future. A server that refuses connections for
// 30 s ends the wait.
func (c *Client) Await(ctx context.Context, requestID, kind string, out any, opts AwaitOptions) error {
	if requestID == "" {
		return fmt.Errorf("await %s: empty request id", kind)
	}
	p := poller{c: c, id: requestID, kind: kind, opts: opts, t: opts.Timings.withDefaults(), start: time.Now()}
	if p.opts.sleep == nil {
		p.opts.sleep = c.cfg.Sleep
	}
	body, isProto, err := p.run(ctx)
	if err != nil {
		if ctx.Err() != nil {
			c.cancelFuture(ctx, requestID, opts.NumericID)
		}
		return err
	}
	if err := decodeFutureResult(body, isProto, out); err != nil {
		return fmt.Errorf("%s result of %s: %w", kind, requestID, err)
	}
	p.report(State{Status: StatusDone})
	return nil
}

type poller struct {
	c     *Client
	id    string
	kind  string
	opts  AwaitOptions
	t     PollTimings
	start time.Time
	polls int
	last  State

	// Between polls of one run.
	allowMeta  bool          // the next poll may be answered with complete_metadata
	metaDone   bool          // complete_metadata came
	failures   int           // consecutive 429s and connection errors
	gone       time.Duration // waited since the server stopped accepting connections
	bad400     int           // 400s in a row (maybe a proxy's)
	firstBill  time.Time     // start of a run of 402s
	errContext string
}

// report calls OnState when something a user would see changed.
func (p *poller) report(s State) {
	if p.opts.OnState == nil {
		return
	}
	s.RequestID, s.Kind, s.Polls, s.Elapsed = p.id, p.kind, p.polls, time.Since(p.start)
	if s.Status == p.last.Status && s.QueueState == p.last.QueueState && s.Reason == p.last.Reason && s.Status != StatusDone {
		return
	}
	p.last = s
	p.opts.OnState(s)
}

// pollReply is the part of a JSON poll answer that steers the protocol.
// It is read leniently: a result may use these keys with other types.
type pollReply struct {
	Type, Status, QueueState, QueueStateReason, Category string
	ResponsePayloadSize                                  *int64
	Error                                                json.RawMessage // nil when absent or null
}

// parsePollReply reads the steering keys of a JSON object; ok is false
// for a body that is not JSON at all.
func parsePollReply(body []byte) (r pollReply, ok bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return r, json.Valid(body) // valid JSON but not an object: a bare result
	}
	str := func(k string) string {
		var s string
		json.Unmarshal(m[k], &s)
		return s
	}
	r.Type, r.Status, r.QueueState, r.QueueStateReason, r.Category =
		str("type"), str("status"), str("queue_state"), str("queue_state_reason"), str("category")
	var n int64
	if json.Unmarshal(m["response_payload_size"], &n) == nil {
		r.ResponsePayloadSize = &n
	}
	if e, ok := m["error"]; ok && string(e) != "null" {
		r.Error = e
	}
	return r, true
}

func (p *poller) run(ctx context.Context) ([]byte, bool, error) {
	const path = "/api/v1/retrieve_future"
	p.report(State{Status: StatusQueued})
	p.allowMeta, p.errContext = true, fmt.Sprintf("%s request %s", p.kind, p.id)
	floor := p.t.FloorMin
	for iter := 0; ; iter++ {
		req := map[string]any{"request_id": wireRequestID(p.id, p.opts.NumericID), "allow_metadata_only": p.allowMeta}
		sent := time.Now()
		p.polls++
		resp, err := p.c.DoRaw(ctx, http.MethodPost, path, req, p.pollOptions(iter)...)
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("%s: %w", p.errContext, ctx.Err())
		}
		var wait time.Duration // 0: poll again after the floor
		if err != nil {
			if wait, err = p.failed(err); err != nil {
				return nil, false, err
			}
		} else {
			body, proto, done, again, err := p.answered(resp, path)
			if done || err != nil {
				return body, proto, err
			}
			if again {
				continue // the result is ready: fetch it at once
			}
		}
		// Pace the next poll: a long-polling server held this one open, so
		// go again at once; one that answered quickly gets a growing floor.
		if wait == 0 {
			if held := time.Since(sent); held < floor {
				wait = floor - held
			}
			floor = min(2*floor, p.t.FloorMax)
		}
		if wait > 0 {
			if err := p.opts.sleep(ctx, wait); err != nil {
				return nil, false, fmt.Errorf("%s: %w", p.errContext, err)
			}
		}
	}
}

// pollOptions are the request options of poll number iter.
func (p *poller) pollOptions(iter int) []Option {
	accept := "application/json"
	if p.opts.Proto {
		accept = "application/x-protobuf"
	}
	opts := []Option{WithoutRetries(), WithTimeout(p.t.PollTimeout), withMaxBody(maxResultBytes),
		WithHeader("Accept", accept),
		WithHeader("X-Tinker-Request-Iteration", strconv.Itoa(iter)),
		WithHeader("X-Stainless-Raw-Response", "raw")}
	if p.kind != "" {
		opts = append(opts, WithHeader("X-Tinker-Request-Type", p.kind))
	}
	if iter == 0 && !p.opts.SubmittedAt.IsZero() {
		rt := time.Since(p.opts.SubmittedAt).Seconds()
		opts = append(opts, WithHeader("X-Tinker-Create-Promise-Roundtrip-Time", strconv.FormatFloat(rt, 'f', 3, 64)))
	}
	return opts
}

// failed handles a poll that got no answer or an error status: how long to
// wait before the next poll, or the error that ends the wait.
func (p *poller) failed(err error) (time.Duration, error) {
	var apiErr *APIError
	var te *TransportError
	switch {
	case errors.As(err, &te):
		if te.Permanent {
			return 0, fmt.Errorf("%s: %w", p.errContext, err)
		}
		if !te.Unreachable {
			p.gone = 0
		} else if p.gone >= maxServerGone {
			return 0, fmt.Errorf("%s: %w: it has refused connections for %s (start it again and resubmit): %w",
				p.errContext, ErrServerGone, p.gone.Round(time.Second), err)
		}
		p.report(State{Status: StatusRetrying, Reason: "connection problem, retrying"})
		wait := p.nextBackoff(nil)
		if te.Unreachable {
			p.gone += wait
		}
		return wait, nil
	case errors.As(err, &apiErr):
		return p.failedStatus(apiErr, err)
	default: // credential or configuration problems
		return 0, fmt.Errorf("%s: %w", p.errContext, err)
	}
}

// ErrServerGone matches the error of a wait that ended because the
// server kept refusing connections (maxServerGone); nothing retries it.
var ErrServerGone = errors.New("the server is gone")

// maxServerGone is how long a poller keeps polling a server that refuses
// connections (nothing listens; a host that does not resolve) before it
// gives up: long enough for a server to restart (tinker serve keeps the
// futures of a clean stop), short enough that a script waiting without a
// deadline (a training loop finishing its steps after Ctrl-C) ends when
// its server is gone for good. The SDK polls forever.
const maxServerGone = 30 * time.Second

// nextBackoff is the wait after a 429 or a connection error: the SDK's
// min(2^n, 30) s for the n-th in a row (from 0), or the server's
// Retry-After when it gives one (0 < d ≤ 60 s), which the SDK ignores here.
func (p *poller) nextBackoff(h http.Header) time.Duration {
	d := p.t.backoff(p.failures)
	p.failures++
	if ra, ok := retryAfter(h, time.Now()); ok {
		d = ra
	}
	return d
}

// failedStatus is failed for an HTTP error status.
func (p *poller) failedStatus(apiErr *APIError, err error) (time.Duration, error) {
	s := apiErr.Status
	if s != http.StatusTooManyRequests {
		p.failures = 0 // any complete answer but a 429 resets the backoff
	}
	p.gone = 0
	if s != http.StatusPaymentRequired {
		p.firstBill = time.Time{}
	}
	switch {
	case s == http.StatusRequestTimeout:
		if r, ok := parsePollReply(apiErr.Body); ok && len(bytes.TrimSpace(apiErr.Body)) > 0 {
			p.bad400 = 0
			p.reportQueue(r)
		}
	case s == http.StatusGone:
		return 0, &FutureExpiredError{RequestID: p.id, Kind: p.kind}
	case s == http.StatusInsufficientStorage:
		return 0, fmt.Errorf("%s: %w", p.errContext, err)
	case s >= 500:
		p.report(State{Status: StatusRetrying, Reason: fmt.Sprintf("server error %d, retrying", s)})
	case s == http.StatusTooManyRequests:
		p.report(State{Status: StatusRetrying, Reason: "rate limited, retrying"})
		return p.nextBackoff(apiErr.Header), nil
	case s == http.StatusBadRequest:
		// Possibly injected by a proxy: a few more tries.
		if p.bad400++; p.bad400 > 3 {
			return 0, fmt.Errorf("%s: %w", p.errContext, err)
		}
	case s == http.StatusPaymentRequired:
		if p.firstBill.IsZero() {
			p.firstBill = time.Now()
		}
		if time.Since(p.firstBill) >= p.t.BillingMax {
			return 0, fmt.Errorf("%s: billing hold for more than %s: %w", p.errContext, p.t.BillingMax, err)
		}
		p.report(State{Status: StatusPaused, Reason: "billing hold (402)"})
		return p.t.BillingPause, nil
	default:
		return 0, fmt.Errorf("%s: %w", p.errContext, err)
	}
	return 0, nil
}

// answered handles a 200 answer: the result (done), a request to fetch the
// result at once (again, after complete_metadata), or nothing yet.
func (p *poller) answered(resp *Response, path string) (body []byte, proto, done, again bool, err error) {
	p.failures, p.gone = 0, 0
	p.firstBill = time.Time{}
	if isProtobuf(resp.Header) {
		return resp.Body, true, true, false, nil
	}
	r, ok := parsePollReply(resp.Body)
	if !ok {
		return nil, false, true, false, p.c.schemaErr(&SchemaError{Reason: "retrieve_future answer is neither JSON nor protobuf"}, path)
	}
	switch {
	case r.Type == "try_again":
		p.reportQueue(r)
		return nil, false, false, false, nil
	case r.Status == "complete_metadata":
		if p.metaDone {
			return nil, false, true, false, p.c.schemaErr(&SchemaError{Field: "status", Reason: "complete_metadata sent twice"}, path)
		}
		if r.ResponsePayloadSize != nil && *r.ResponsePayloadSize > maxResultBytes {
			return nil, false, true, false, fmt.Errorf("%s: result of %d MiB is larger than this client accepts (%d MiB)",
				p.errContext, *r.ResponsePayloadSize>>20, maxResultBytes>>20)
		}
		p.metaDone, p.allowMeta = true, false
		return nil, false, false, true, nil
	case r.Error != nil:
		return nil, false, true, false, &RequestFailedError{RequestID: p.id, Kind: p.kind, Message: errorText(r.Error), Category: category(r.Category)}
	default:
		return resp.Body, false, true, false, nil
	}
}

func (p *poller) reportQueue(r pollReply) {
	qs := r.QueueState
	switch qs {
	case "active", "paused_capacity", "paused_rate_limit":
	case "":
		qs = "active"
	default:
		qs = "unknown"
	}
	s := State{Status: StatusRunning, QueueState: qs, Reason: r.QueueStateReason}
	if strings.HasPrefix(qs, "paused") {
		s.Status = StatusPaused
		if s.Reason == "" {
			s.Reason = map[string]string{"paused_capacity": "waiting for capacity",
				"paused_rate_limit": "concurrency limit reached"}[qs]
		}
	}
	p.report(s)
}

func isProtobuf(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/x-protobuf"
}

// errorText renders a failure's "error" value: a string as is, anything
// else as compact JSON.
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

func category(c string) string {
	switch c = strings.ToLower(c); c {
	case "user", "server":
		return c
	}
	return "unknown"
}

func decodeFutureResult(body []byte, isProto bool, out any) error {
	switch out := out.(type) {
	case nil:
		return nil
	case *FutureResult:
		*out = FutureResult{Proto: isProto, Body: body}
		return nil
	case tinkerproto.Message:
		if !isProto {
			return errors.New("the server sent JSON where a protobuf result was expected")
		}
		if err := tinkerproto.Unmarshal(body, out); err != nil {
			return fmt.Errorf("decode protobuf: %w", err)
		}
		return nil
	}
	if isProto {
		return errors.New("the server sent protobuf where a JSON result was expected")
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &SchemaError{Path: "/api/v1/retrieve_future", Reason: err.Error()}
	}
	return nil
}

// cancelTimeout bounds the cancel_future request sent after an interrupt.
const cancelTimeout = 2 * time.Second

// cancelFuture tells a server that offers it (tinker_cancel_future in
// client/config, as tinker serve does) that the caller stopped waiting for
// requestID, so its work stops now rather than when the session's
// heartbeats stop. Against other servers it sends nothing. Best effort:
// the caller's context is already done, so this has its own short one.
func (c *Client) cancelFuture(ctx context.Context, requestID string, numeric bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if cfg, err := c.ServerConfig(ctx); err != nil || !cfg.CancelFuture {
		return
	}
	body := map[string]any{"request_id": wireRequestID(requestID, numeric)}
	if err := c.Do(ctx, http.MethodPost, "/api/v1/cancel_future", body, nil, WithoutRetries()); err != nil {
		c.logf("cancel %s: %v", requestID, err)
	}
}
