package tinkerapi_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// nTimes applies f to the first n requests to path, then forwards.
func nTimes(path string, n int, f fault) func(s *seen) fault {
	return func(s *seen) fault {
		if s.Path == path && n > 0 {
			n--
			return f
		}
		return fault{}
	}
}

// faultRun is the events of one faulted operation: the requests to the
// faulted path, in order, and the client's waits after each.
type faultRun struct {
	reqs  []*seen
	waits [][]time.Duration // waits[i]: after reqs[i], before the next
}

func collect(ev []event, path string) faultRun {
	var r faultRun
	for _, e := range ev {
		switch {
		case e.req != nil && e.req.Path == path:
			r.reqs = append(r.reqs, e.req)
			r.waits = append(r.waits, nil)
		case e.req == nil && len(r.reqs) > 0:
			r.waits[len(r.reqs)-1] = append(r.waits[len(r.reqs)-1], e.sleep)
		}
	}
	return r
}

// within checks a wait against the SDK's [lo, hi] (its jitter), widened by
// the 20% the harness allows.
func within(t *testing.T, what string, got []time.Duration, lo, hi time.Duration) {
	t.Helper()
	if len(got) != 1 {
		t.Errorf("%s: waits %v, want one of %v–%v", what, got, lo, hi)
		return
	}
	if g := got[0]; float64(g) < 0.8*float64(lo) || float64(g) > 1.2*float64(hi) {
		t.Errorf("%s: waited %v, the SDK waits %v–%v", what, g, lo, hi)
	}
}

func key(s *seen) string   { return s.Header.Get("X-Idempotency-Key") }
func count(s *seen) string { return s.Header.Get("X-Stainless-Retry-Count") }

// sdkFirstRetry is the SDK's first generic retry wait: 0.5 s × (0.75, 1].
const sdkFirstLo, sdkFirstHi = 375 * time.Millisecond, 500 * time.Millisecond

// TestWireRetriesMatchSDK injects the faults of the SDK's retry paths at
// the proxy and checks tinker waits and retries as the SDK does.
func TestWireRetriesMatchSDK(t *testing.T) {
	e := newWireEnv(t)
	ctx := t.Context()

	// 429 with Retry-After: 2 → wait 2 s, same key, retry count 1.
	e.proxy.take()
	e.proxy.setFaults(nTimes("/api/v1/create_sampling_session", 1, fault{kind: "status", status: 429, header: map[string]string{"Retry-After": "2"}, body: `{"detail":"slow down"}`}))
	ss, err := e.sess.CreateSamplingSession(ctx, models.TinyLlama, "")
	if err != nil {
		t.Fatal(err)
	}
	r := collect(e.proxy.take(), "/api/v1/create_sampling_session")
	sameKeyRetried(t, "429 Retry-After: 2", r, 2)
	within(t, "429 Retry-After: 2", r.waits[0], 2*time.Second, 2*time.Second)

	// 429 with Retry-After-Ms: 1500 on a GET → 1.5 s.
	e.proxy.setFaults(nTimes("/api/v1/training_runs", 1, fault{kind: "status", status: 429, header: map[string]string{"Retry-After-Ms": "1500"}, body: `{"detail":"slow down"}`}))
	if _, err := e.c.ListTrainingRuns(ctx, 20, 0, ""); err != nil {
		t.Fatal(err)
	}
	r = collect(e.proxy.take(), "/api/v1/training_runs")
	if len(r.reqs) != 2 || count(r.reqs[1]) != "1" {
		t.Fatalf("429 on a GET: %d requests", len(r.reqs))
	}
	within(t, "429 Retry-After-Ms: 1500", r.waits[0], 1500*time.Millisecond, 1500*time.Millisecond)

	// A dropped connection on asample: the SDK's holder waits 1 s and sends
	// the same request again under a new key, retry count 0.
	e.proxy.setFaults(nTimes("/api/v1/asample", 1, fault{kind: "drop"}))
	greedy := tinkerapi.NewSampleRequest([]int{models.TinyBOS, 'H'})
	greedy.Temperature, greedy.MaxTokens = 0, 2
	if _, err := e.sess.Sample(ctx, ss, greedy); err != nil {
		t.Fatal(err)
	}
	r = collect(e.proxy.take(), "/api/v1/asample")
	if len(r.reqs) != 2 || key(r.reqs[0]) == key(r.reqs[1]) || count(r.reqs[1]) != "0" || string(r.reqs[0].Body) != string(r.reqs[1].Body) {
		t.Errorf("asample after a dropped connection: %d requests, keys %q %q, count %s; want the same body under a new key, count 0",
			len(r.reqs), key(r.reqs[0]), key(r.reqs[len(r.reqs)-1]), count(r.reqs[len(r.reqs)-1]))
	}
	within(t, "asample dropped", r.waits[0], time.Second, time.Second)

	// Polls: a dropped connection waits 1 s; 429s wait 1 s then 2 s; a
	// Retry-After is honoured (the SDK ignores it there: compat.md).
	tc, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 2, TrainAttn: true, TrainMLP: true, TrainUnembed: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	polls := 0
	e.proxy.take()
	e.proxy.setFaults(func(s *seen) fault {
		if s.Path != "/api/v1/retrieve_future" {
			return fault{}
		}
		polls++
		switch polls {
		case 1:
			return fault{kind: "drop"}
		case 2: // an answer: the backoff starts again
			return fault{kind: "try_again"}
		case 3, 4:
			return fault{kind: "status", status: 429, body: `{"detail":"slow down"}`}
		case 5:
			return fault{kind: "status", status: 429, header: map[string]string{"Retry-After": "3"}, body: `{"detail":"slow down"}`}
		}
		return fault{}
	})
	if _, err := tc.SaveState(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	r = collect(e.proxy.take(), "/api/v1/retrieve_future")
	if len(r.reqs) < 6 {
		t.Fatalf("%d polls", len(r.reqs))
	}
	within(t, "poll dropped", r.waits[0], time.Second, time.Second)
	within(t, "first 429 on a poll", r.waits[2], time.Second, time.Second)
	within(t, "second 429 on a poll", r.waits[3], 2*time.Second, 2*time.Second)
	within(t, "429 Retry-After: 3 on a poll", r.waits[4], 3*time.Second, 3*time.Second)
	for i := 1; i < len(r.reqs); i++ {
		if key(r.reqs[i]) == key(r.reqs[i-1]) || count(r.reqs[i]) != "0" {
			t.Errorf("poll %d: key %q count %s; each poll is a new request", i, key(r.reqs[i]), count(r.reqs[i]))
		}
	}

	// A dropped connection on a submission: the SDK waits ~0.45 s and
	// sends it again under the same key with retry count 1 (Go's transport
	// would resend at once, count 0).
	e.proxy.setFaults(nTimes("/api/v1/optim_step", 1, fault{kind: "drop"}))
	if _, err := tc.OptimStep(ctx, tinkerapi.DefaultAdamParams()); err != nil {
		t.Fatal(err)
	}
	r = collect(e.proxy.take(), "/api/v1/optim_step")
	sameKeyRetried(t, "dropped connection", r, 2)
	within(t, "dropped connection", r.waits[0], sdkFirstLo, sdkFirstHi)

	// 408 and 503 without Retry-After: the first backoff.
	for _, status := range []int{408, 503} {
		e.proxy.setFaults(nTimes("/api/v1/save_weights_for_sampler", 1, fault{kind: "status", status: status, body: `{"detail":"busy"}`}))
		if _, err := tc.SaveWeightsForSampler(ctx, "final", nil); err != nil && status == 408 {
			t.Fatal(err)
		}
		r = collect(e.proxy.take(), "/api/v1/save_weights_for_sampler")
		sameKeyRetried(t, "status", r, 2)
		within(t, "status", r.waits[0], sdkFirstLo, sdkFirstHi)
	}

	// 503 on the archive endpoint: Retry-After: 2 → 2 s; without → ~0.4 s.
	run := tc.ModelID()
	arch := "/api/v1/training_runs/" + run + "/checkpoints/weights/s1/archive"
	for _, ra := range []string{"2", ""} {
		h := map[string]string{}
		if ra != "" {
			h["Retry-After"] = ra
		}
		e.proxy.setFaults(nTimes(arch, 1, fault{kind: "status", status: 503, header: h, body: `{"detail":"being generated"}`}))
		if _, err := e.c.ArchiveURL(ctx, run, "weights/s1"); err != nil {
			t.Fatal(err)
		}
		r = collect(e.proxy.take(), arch)
		if ra == "2" {
			within(t, "archive 503 Retry-After: 2", r.waits[0], 2*time.Second, 2*time.Second)
		} else {
			within(t, "archive 503", r.waits[0], sdkFirstLo, sdkFirstHi)
		}
	}

	// try_again answered at once (a server that does not hold polls):
	// tinker re-polls after a floor of 50–250 ms, the SDK at once
	// (compat.md says why).
	tries := 0
	e.proxy.setFaults(func(s *seen) fault {
		if s.Path == "/api/v1/retrieve_future" && tries < 3 {
			tries++
			return fault{kind: "try_again"}
		}
		return fault{}
	})
	if _, err := tc.SaveState(ctx, "s2", nil); err != nil {
		t.Fatal(err)
	}
	r = collect(e.proxy.take(), "/api/v1/retrieve_future")
	for i := 0; i < 3 && i < len(r.waits); i++ {
		for _, w := range r.waits[i] {
			if w > 250*time.Millisecond {
				t.Errorf("after try_again %d: waited %v, more than the 250 ms floor", i, w)
			}
		}
	}
	e.proxy.setFaults(nil)
}

// sameKeyRetried: the call reached the proxy n times under one
// idempotency key with retry counts 0, 1, ….
func sameKeyRetried(t *testing.T, what string, r faultRun, n int) {
	t.Helper()
	if len(r.reqs) != n {
		t.Fatalf("%s: %d requests, want %d", what, len(r.reqs), n)
	}
	for i, s := range r.reqs {
		if key(s) != key(r.reqs[0]) || count(s) != strconv.Itoa(i) {
			t.Errorf("%s: attempt %d has key %q count %s; want key %q count %d", what, i, key(s), count(s), key(r.reqs[0]), i)
		}
	}
}

// TestWireLostResponse: create_model's answer is lost (the server did the
// work, the connection closed before the client read it). The SDK sends
// it again under the same key, 11 attempts in all with its backoff
// (0.5, 1, 2, 4, 8, then 10 s, each × (0.75, 1]), then gives up.
func TestWireLostResponse(t *testing.T) {
	e := newWireEnv(t)
	ctx := t.Context()
	e.proxy.take()
	e.proxy.setFaults(nTimes("/api/v1/create_model", 1, fault{kind: "lost"}))
	if _, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 2, TrainAttn: true}, nil); err != nil {
		t.Fatal(err)
	}
	r := collect(e.proxy.take(), "/api/v1/create_model")
	sameKeyRetried(t, "lost once", r, 2)

	e.proxy.setFaults(nTimes("/api/v1/create_model", 100, fault{kind: "lost"}))
	_, err := e.sess.CreateTrainingClient(ctx, models.TinyLlama, tinkerapi.LoraConfig{Rank: 2, TrainAttn: true}, nil)
	var te *tinkerapi.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("always lost: err %v, want a transport error", err)
	}
	r = collect(e.proxy.take(), "/api/v1/create_model")
	sameKeyRetried(t, "always lost", r, 11)
	for i := 0; i < 10; i++ {
		d := min(500*time.Millisecond<<i, 10*time.Second)
		within(t, "lost response", r.waits[i], d*3/4, d)
	}
	if len(r.waits[10]) != 0 {
		t.Errorf("waited %v after the last attempt", r.waits[10])
	}
}

// TestWireServerGone (issue 31, item 6): once the server is gone for good
// (connections refused), a sample and a training wait without a deadline
// end with an error saying so, after a bounded wait, instead of retrying
// forever.
func TestWireServerGone(t *testing.T) {
	e := newWireEnv(t)
	ctx := context.Background() // no deadline, as a loop finishing its steps after Ctrl-C
	ss, err := e.sess.CreateSamplingSession(t.Context(), models.TinyLlama, "")
	if err != nil {
		t.Fatal(err)
	}
	tc, err := e.sess.CreateTrainingClient(t.Context(), models.TinyLlama, tinkerapi.LoraConfig{Rank: 2, TrainAttn: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := tinkerapi.NewSampleRequest([]int{models.TinyBOS, 'H'})
	long.MaxTokens, long.NumSamples = 2000, 32
	f, err := tc.OptimStepAsync(t.Context(), tinkerapi.DefaultAdamParams())
	if err != nil {
		t.Fatal(err)
	}
	e.proxy.take()
	e.front.Close() // nothing listens any more
	e.front.CloseClientConnections()
	waited := func() time.Duration {
		var total time.Duration
		for _, ev := range e.proxy.take() {
			total += ev.sleep
		}
		return total
	}
	if _, err := e.sess.Sample(ctx, ss, long); err == nil {
		t.Error("sample against a gone server succeeded")
	} else if w := waited(); w > 2*time.Minute {
		t.Errorf("sample gave up after %v of waiting: %v", w, err)
	}
	if _, err := f.Wait(ctx); !errors.Is(err, tinkerapi.ErrServerGone) {
		t.Errorf("optim_step wait: %v, want ErrServerGone", err)
	} else if w := waited(); w > time.Minute {
		t.Errorf("the wait gave up after %v", w)
	}
}
