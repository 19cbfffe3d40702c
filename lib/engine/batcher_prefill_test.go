package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// TestConcurrentPromptsOneBatch submits 8 requests with different 64-token
// prompts and seeds at once: each gets exactly its solo tokens and
// logprobs, and, counted by the batcher's own step counter, all 8 prompts
// go through one forward pass (512 rows) and every later step carries one
// row per sequence still generating: max-length steps in all, not a prompt
// or a sequence per step.
func TestConcurrentPromptsOneBatch(t *testing.T) {
	procsList := []int{1, 2}
	if testing.Short() { // the emulated runs (mk/engine.mk)
		procsList = procsList[1:]
	}
	for _, procs := range procsList {
		old := runtime.GOMAXPROCS(procs)
		for _, name := range testModels(t) {
			concurrentPrompts(t, mustLoad(t, name), true, true, fmt.Sprintf("GOMAXPROCS=%d %s", procs, name))
		}
		runtime.GOMAXPROCS(old)
	}
}

// TestArrivingPromptsOneBatch: 8 requests whose goroutines start together
// on an idle batch, with nothing holding it, are still prefilled in one
// forward pass and decode together: the batch's first admission lets the
// goroutines already runnable submit theirs first (gather). On one core
// every goroutine runs before the batch's first step, so the counts are
// exact (gather's time bound is lifted: a loaded machine's pauses must
// not decide a count); on two only the results are checked (the other
// core may start the batch before all have been created).
func TestArrivingPromptsOneBatch(t *testing.T) {
	defer func(d time.Duration) { gatherFor = d }(gatherFor)
	gatherFor = time.Minute
	for _, procs := range []int{1, 2} {
		old := runtime.GOMAXPROCS(procs)
		for _, name := range testModels(t) {
			m := mustLoad(t, name)
			label := fmt.Sprintf("GOMAXPROCS=%d %s", procs, name)
			concurrentPrompts(t, m, false, procs == 1, label)
		}
		runtime.GOMAXPROCS(old)
	}
}

// concurrentPrompts runs 8 requests with different 64-token prompts at
// once, held until all are queued or not, and checks each against its
// solo run and, if counted, the batch's step and row counts against one
// prefill pass followed by one row per sequence and token.
func concurrentPrompts(t *testing.T, m *Model, held, counted bool, label string) {
	t.Helper()
	reqs := make([]SampleRequest, 8)
	solo := make([]*SampleResponse, len(reqs))
	for i := range reqs {
		reqs[i] = SampleRequest{Prompt: spreadPrompt(m, 64, 7, i*31+3), MaxTokens: 6, Temperature: 1, Seed: seedp(int64(i + 1))}
		solo[i] = sample(t, m, reqs[i])
	}
	got := make([]*SampleResponse, len(reqs))
	var release func()
	if held {
		release = holdBatch(t, m)
	}
	steps0, rows0 := m.batch.steps.Load(), m.batch.rows.Load()
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { got[i], _ = m.Sample(context.Background(), r) })
	}
	if held {
		waitQueued(t, m.batch, len(reqs))
		release()
	}
	wg.Wait()
	rows := sameAsSolo(t, label, solo, got)
	longest := 0
	for i, r := range got {
		longest, rows = max(longest, len(r.Sequences[0].Tokens)), rows+int64(len(reqs[i].Prompt))
	}
	if steps, r := m.batch.steps.Load()-steps0, m.batch.rows.Load()-rows0; counted && (steps != int64(longest) || r != rows) {
		t.Errorf("%s: %d steps of %d rows in all, want %d steps (one prefill, then decoding) of %d rows",
			label, steps, r, longest, rows)
	}
}

// TestWaitingPromptsCatchUp: four 32-token prompts arriving while another
// request generates, on a model limited to 16 shared prompt positions per
// step, each add 16 positions to the step while they wait, so all four
// have their first token after 4 steps (64 positions, then 32, 16 and 16)
// rather than the 8 that one 16-position budget for all of them took.
func TestWaitingPromptsCatchUp(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	defer func(w int) { sharedPrefillWork = w }(sharedPrefillWork)
	sharedPrefillWork = 1
	var steps0, last atomic.Int64
	var wg sync.WaitGroup
	first := SampleRequest{Prompt: []int{models.TinyBOS, 'z'}, MaxTokens: 40, Temperature: 1, Seed: seedp(1),
		StopFunc: func(gen []int) bool {
			if len(gen) != 1 {
				return false
			}
			steps0.Store(m.batch.steps.Load())
			for i := range 4 {
				p := spreadPrompt(m, 32, 5, i*17+1)
				wg.Go(func() {
					_, err := m.Sample(context.Background(), SampleRequest{Prompt: p, MaxTokens: 1, Temperature: 1,
						StopFunc: func([]int) bool { last.Store(max(last.Load(), m.batch.steps.Load())); return false }})
					if err != nil {
						t.Error(err)
					}
				})
			}
			waitQueued(t, m.batch, 4)
			return false
		}}
	if _, err := m.Sample(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if n := last.Load() - steps0.Load(); n != 4 {
		t.Errorf("the four waiting prompts had their first tokens after %d steps, want 4", n)
	}
}
