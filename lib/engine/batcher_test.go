package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// adapters returns the model with two full adapters of different ranks and
// one that changes only q_proj and lm_head.
func adapters(t *testing.T, m *Model) []*Model {
	t.Helper()
	c := m.Config()
	var out []*Model
	for i, rank := range []int{4, 8, 2} {
		ts := randomLoRA(c, rank, uint64(10+i), false)
		if i == 2 {
			maps.DeleteFunc(ts, func(k string, _ Tensor) bool {
				return !strings.Contains(k, "q_proj") && !strings.Contains(k, "lm_head")
			})
		}
		l, err := NewLoRA(c, ts, rank, float64(2*rank), false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.WithLoRA(l))
	}
	return out
}

// call is one Sample call of a concurrency test.
type call struct {
	m   *Model
	req SampleRequest
}

// mixedCalls builds requests that differ in everything the batch must keep
// apart: adapter, prompt length (one longer than a prefill chunk),
// num_samples (one above maxBatchSeqs), max_tokens, temperature, top-k/p,
// seed, stop tokens and prompt logprobs.
func mixedCalls(t *testing.T, m *Model) []call {
	ad := adapters(t, m)
	long := make([]int, 2*prefillChunk+37)
	for i := range long {
		long[i] = (i*37 + 11) % m.cfg.VocabSize
	}
	return []call{
		{m, SampleRequest{Prompt: []int{models.TinyBOS, 'a'}, MaxTokens: 40, Temperature: 1, Seed: seedp(1)}},
		{m, SampleRequest{Prompt: long, MaxTokens: 12, Temperature: 0.7, Seed: seedp(2), NumSamples: 3, PromptLogprobs: true, TopKPromptLogprobs: 3}},
		{ad[0], SampleRequest{Prompt: []int{models.TinyBOS, 'b', 'c'}, MaxTokens: 25, Temperature: 1.3, Seed: seedp(3), NumSamples: 5, TopK: 20}},
		{ad[1], SampleRequest{Prompt: []int{models.TinyBOS, 'd'}, MaxTokens: 30, Temperature: 0, NumSamples: 2}},
		{ad[2], SampleRequest{Prompt: long[:prefillChunk+1], MaxTokens: 20, Temperature: 0.9, TopP: 0.8, Seed: seedp(4), ModelLogprobs: true}},
		{ad[0], SampleRequest{Prompt: []int{models.TinyBOS, 'e'}, MaxTokens: 35, Temperature: 1, Seed: seedp(5), NumSamples: 4, StopTokens: []int{'e', 'x', 'q'}}},
		{m, SampleRequest{Prompt: []int{models.TinyBOS, 'f'}, MaxTokens: 6, Temperature: 1, Seed: seedp(6), NumSamples: maxBatchSeqs + 3}},
		{ad[1], SampleRequest{Prompt: []int{models.TinyBOS, 'g', 'h'}, MaxTokens: 0, PromptLogprobs: true}},
	}
}

// sameResponse reports the first difference between two responses, bit for
// bit, or "".
func sameResponse(a, b *SampleResponse) string {
	if len(a.Sequences) != len(b.Sequences) {
		return fmt.Sprintf("%d sequences vs %d", len(a.Sequences), len(b.Sequences))
	}
	for i, s := range a.Sequences {
		o := b.Sequences[i]
		if !slices.Equal(s.Tokens, o.Tokens) || !slices.Equal(s.Logprobs, o.Logprobs) || s.StopReason != o.StopReason {
			return fmt.Sprintf("sample %d: %v %v %s vs %v %v %s", i, s.Tokens, s.Logprobs, s.StopReason, o.Tokens, o.Logprobs, o.StopReason)
		}
	}
	if len(a.PromptLogprobs) != len(b.PromptLogprobs) {
		return "prompt logprobs missing"
	}
	for i, p := range a.PromptLogprobs {
		if (p == nil) != (b.PromptLogprobs[i] == nil) || p != nil && *p != *b.PromptLogprobs[i] {
			return fmt.Sprintf("prompt logprob %d differs", i)
		}
	}
	if fmt.Sprint(a.TopKPromptLogprobs) != fmt.Sprint(b.TopKPromptLogprobs) {
		return "top-k prompt logprobs differ"
	}
	return ""
}

// TestConcurrentMatchesSolo runs requests that differ in every respect at
// the same time, on a model and its adapters, and requires each to give
// exactly the tokens and logprobs it gives alone. Each request's StopFunc
// logs its calls; as every stop check of a model runs on its one stepping
// goroutine, calls of two requests alternating in the log prove they
// shared steps.
func TestConcurrentMatchesSolo(t *testing.T) {
	for _, procs := range []int{1, 3} {
		old := runtime.GOMAXPROCS(procs)
		for _, name := range testModels(t) {
			calls := mixedCalls(t, mustLoad(t, name))
			var mu sync.Mutex
			var log []int
			for i := range calls {
				calls[i].req.StopFunc = func([]int) bool {
					mu.Lock()
					log = append(log, i)
					mu.Unlock()
					return false
				}
			}
			solo := make([]*SampleResponse, len(calls))
			for i, c := range calls {
				solo[i] = sample(t, c.m, c.req)
			}
			log = nil
			got := make([]*SampleResponse, len(calls))
			var wg sync.WaitGroup
			release := holdBatch(t, calls[0].m)
			for i, c := range calls {
				wg.Go(func() { got[i], _ = c.m.Sample(context.Background(), c.req) })
			}
			waitQueued(t, calls[0].m.batch, len(calls))
			release()
			wg.Wait()
			for i := range calls {
				if got[i] == nil {
					t.Fatalf("GOMAXPROCS=%d %s request %d failed", procs, name, i)
				}
				if d := sameResponse(solo[i], got[i]); d != "" {
					t.Errorf("GOMAXPROCS=%d %s request %d: concurrent differs from solo: %s", procs, name, i, d)
				}
			}
			t.Logf("GOMAXPROCS=%d %s: %d alternations", procs, name, alternations(log))
			if n := alternations(log); n < len(calls) {
				t.Errorf("GOMAXPROCS=%d %s: the requests' steps alternated only %d times; they did not share the batch", procs, name, n)
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// holdBatch stops m's stepping goroutine inside a step (a request whose
// first stop check waits) and returns the function that lets it go on, so
// requests submitted meanwhile all queue and are admitted together however
// the Go scheduler runs their goroutines.
func holdBatch(t *testing.T, m *Model) (release func()) {
	t.Helper()
	held, gate, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once sync.Once
	go func() {
		defer close(done)
		m.Sample(context.Background(), SampleRequest{Prompt: []int{models.TinyBOS}, MaxTokens: 4,
			StopFunc: func([]int) bool { once.Do(func() { close(held); <-gate }); return true }})
	}()
	<-held
	return func() { close(gate); <-done }
}

// queued is the number of requests waiting in b's queue.
func queued(b *batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// waitQueued waits until n requests wait in b's queue.
func waitQueued(t *testing.T, b *batcher, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		q := queued(b)
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests queued after 10s", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// alternations counts the places where the log switches from one request
// back to one seen earlier.
func alternations(log []int) int {
	n := 0
	for i := 1; i < len(log); i++ {
		if log[i] != log[i-1] && slices.Contains(log[:i-1], log[i]) {
			n++
		}
	}
	return n
}

// TestLongPromptInterleaved checks that a long prompt arriving while
// another request generates is prefilled a chunk per step: the running
// request keeps getting tokens during the prefill instead of waiting for
// all of it.
func TestLongPromptInterleaved(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	long := make([]int, 11*prefillChunk+5)
	for i := range long {
		long[i] = (i*13 + 1) % m.cfg.VocabSize
	}
	// 12 chunks: the first request runs a step with each of them.
	if n := interleavedTokens(t, m, long); n < 11 {
		t.Errorf("the running request got %d tokens while a %d-token prompt was prefilled, want >= 11", n, len(long))
	}
}

// interleavedTokens starts a request on m, submits the prompt long while it
// generates, and returns how many tokens the first request got between
// that submission and the second request's first sampled token.
func interleavedTokens(t *testing.T, m *Model, long []int) int64 {
	t.Helper()
	var during, started atomic.Int64
	during.Store(-1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	second := make(chan error, 1)
	first := SampleRequest{Prompt: []int{models.TinyBOS, 'z'}, MaxTokens: 1500, Temperature: 1, Seed: seedp(1),
		StopFunc: func(gen []int) bool {
			if len(gen) == 1 {
				go func() {
					during.Store(0) // counting from the moment it is submitted
					_, err := m.Sample(ctx, SampleRequest{Prompt: long, MaxTokens: 3, Temperature: 1,
						StopFunc: func([]int) bool { started.CompareAndSwap(0, 1); return false }})
					second <- err
				}()
				// Hold this step until the second request is queued, so a
				// slow goroutine start cannot let this one finish first.
				for deadline := time.Now().Add(10 * time.Second); queued(m.batch) == 0 && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			} else if during.Load() >= 0 && started.Load() == 0 {
				during.Add(1)
			}
			return started.Load() == 1
		}}
	if _, err := m.Sample(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	return during.Load()
}

// TestSharedPrefill checks the prompt positions a step takes while others
// generate: all of a chunk on the tiny models, 16 on the Qwen3-0.6B shape
// (about 50 ms of products instead of 128 positions' seconds); and that a
// long prompt then advances that many positions per step.
func TestSharedPrefill(t *testing.T) {
	for _, name := range testModels(t) {
		if n := mustLoad(t, name).sharedPrefill(); n != prefillChunk {
			t.Errorf("%s: %d positions per shared step, want %d", name, n, prefillChunk)
		}
	}
	if n := (&Model{cfg: qwen3Small()}).sharedPrefill(); n != 16 {
		t.Errorf("0.6B shape: %d positions per shared step, want 16", n)
	}
	m := mustLoad(t, models.TinyLlama)
	defer func(w int) { sharedPrefillWork = w }(sharedPrefillWork)
	sharedPrefillWork = 1
	long := make([]int, 20*16+3)
	for i := range long {
		long[i] = (i*13 + 1) % m.cfg.VocabSize
	}
	if n := interleavedTokens(t, m, long); n < 20 {
		t.Errorf("the running request got %d tokens while a %d-token prompt was prefilled in 16-position steps, want >= 20", n, len(long))
	}
}

// TestConcurrentCancellation cancels one request in the middle of a batch:
// it returns context.Canceled at once, its callbacks are never called
// again, and the request beside it still gets exactly its solo result.
func TestConcurrentCancellation(t *testing.T) {
	m := mustLoad(t, models.TinyQwen3)
	other := SampleRequest{Prompt: []int{models.TinyBOS, 'o'}, MaxTokens: 200, Temperature: 1, Seed: seedp(8), NumSamples: 2}
	want := sample(t, m, other)
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	var gone atomic.Bool
	victim := SampleRequest{Prompt: []int{models.TinyBOS, 'v'}, MaxTokens: 2000, Temperature: 1, NumSamples: 3,
		StopFunc: func(gen []int) bool {
			if gone.Load() {
				t.Error("StopFunc called after Sample returned")
			}
			if calls.Add(1) == 30 {
				cancel()
			}
			return false
		}}
	errc := make(chan error, 1)
	go func() {
		_, err := m.Sample(ctx, victim)
		gone.Store(true)
		errc <- err
	}()
	got, err := m.Sample(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	if d := sameResponse(want, got); d != "" {
		t.Errorf("request beside a cancelled one: %s", d)
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: err = %v, want context.Canceled", err)
	}
	// Cancelled from outside while queued behind a large request.
	big := SampleRequest{Prompt: []int{models.TinyBOS}, MaxTokens: 50, Temperature: 1, NumSamples: maxBatchSeqs}
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := m.Sample(context.Background(), big); done <- err }()
	go func() {
		_, err := m.Sample(ctx2, SampleRequest{Prompt: []int{1}, MaxTokens: 5, NumSamples: 1})
		done <- err
	}()
	cancel2()
	for range 2 {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
}

// TestBatcherPanicFailsOneRequest: a request whose StopFunc panics gets the
// panic back in its own Sample call; the request beside it is unaffected.
func TestBatcherPanicFailsOneRequest(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	other := SampleRequest{Prompt: []int{models.TinyBOS, 'p'}, MaxTokens: 120, Temperature: 1, Seed: seedp(3)}
	want := sample(t, m, other)
	bad := SampleRequest{Prompt: []int{models.TinyBOS}, MaxTokens: 100, Temperature: 1,
		StopFunc: func(gen []int) bool {
			if len(gen) == 5 {
				panic("stop func broke")
			}
			return false
		}}
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_, _ = m.Sample(context.Background(), bad)
	}()
	got := sample(t, m, other)
	if d := sameResponse(want, got); d != "" {
		t.Errorf("request beside a panicking one: %s", d)
	}
	if p := <-panicked; p == nil || !strings.Contains(fmt.Sprint(p), "stop func broke") {
		t.Errorf("Sample with a panicking StopFunc: recovered %v", p)
	}
}

// TestBatcherAdmission: admission is first come, first served, and stops
// at maxBatchSeqs sequences unless the batch is empty.
func TestBatcherAdmission(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	b := &batcher{}
	s := &stepper{b: b, m: m}
	var jobs []*job
	for _, n := range []int{maxBatchSeqs + 1, 40, 30, 10} {
		jobs = append(jobs, newJob(context.Background(), m, SampleRequest{Prompt: []int{1}, NumSamples: n}))
	}
	b.queue = slices.Clone(jobs)
	step := func(want ...*job) {
		t.Helper()
		if !s.admit() || !slices.Equal(s.active, want) {
			t.Fatalf("admitted %d jobs, want %d", len(s.active), len(want))
		}
	}
	step(jobs[0]) // too large, but alone
	jobs[0].fail(nil)
	step(jobs[1]) // 40+30 > maxBatchSeqs; 10 waits its turn
	jobs[1].fail(nil)
	step(jobs[2], jobs[3])
	jobs[2].fail(nil)
	jobs[3].fail(nil)
	if s.admit() || b.running {
		t.Error("stepper kept running with no jobs")
	}
}

// TestBatcherNoLeak runs bursts of requests (some cancelled, one after
// another with no pause, so a stepper is often just ending when the next
// call arrives) and checks that every call returns and no goroutine is
// left once they have (forkJoin's workers, started once and kept, are not
// counted).
func TestBatcherNoLeak(t *testing.T) {
	m := mustLoad(t, models.TinyQwen3)
	goroutines := func() int { return runtime.NumGoroutine() - int(workPool.started.Load()) }
	before := goroutines()
	for round := range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := range 4 {
			c := context.Background()
			if i == 3 {
				c = ctx
			}
			wg.Go(func() {
				_, err := m.Sample(c, SampleRequest{Prompt: []int{models.TinyBOS, i}, MaxTokens: 3 + round%5, Temperature: 1})
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Error(err)
				}
			})
		}
		if round%2 == 0 {
			cancel()
		}
		wg.Wait()
		cancel()
		// The last request leaves and the next arrives at once.
		sample(t, m, SampleRequest{Prompt: []int{models.TinyBOS}, MaxTokens: 1})
	}
	deadline := time.Now().Add(5 * time.Second)
	for goroutines() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := goroutines(); n > before {
		t.Errorf("%d goroutines before, %d after every call returned", before, n)
	}
}
