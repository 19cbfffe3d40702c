package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

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
			m := mustLoad(t, name)
			reqs := make([]SampleRequest, 8)
			solo := make([]*SampleResponse, len(reqs))
			for i := range reqs {
				p := make([]int, 64)
				for k := range p {
					p[k] = (k*7 + i*31 + 3) % m.cfg.VocabSize
				}
				reqs[i] = SampleRequest{Prompt: p, MaxTokens: 6, Temperature: 1, Seed: seedp(int64(i + 1))}
				solo[i] = sample(t, m, reqs[i])
			}
			got := make([]*SampleResponse, len(reqs))
			release := holdBatch(t, m)
			steps0, rows0 := m.batch.steps.Load(), m.batch.rows.Load()
			var wg sync.WaitGroup
			for i, r := range reqs {
				wg.Go(func() { got[i], _ = m.Sample(context.Background(), r) })
			}
			waitQueued(t, m.batch, len(reqs))
			release()
			wg.Wait()
			longest, rows := 0, int64(0)
			for i := range reqs {
				if got[i] == nil {
					t.Fatalf("GOMAXPROCS=%d %s request %d failed", procs, name, i)
				}
				if d := sameResponse(solo[i], got[i]); d != "" {
					t.Errorf("GOMAXPROCS=%d %s request %d: concurrent differs from solo: %s", procs, name, i, d)
				}
				n := len(got[i].Sequences[0].Tokens)
				longest, rows = max(longest, n), rows+int64(len(reqs[i].Prompt)+n-1)
			}
			if steps, r := m.batch.steps.Load()-steps0, m.batch.rows.Load()-rows0; steps != int64(longest) || r != rows {
				t.Errorf("GOMAXPROCS=%d %s: %d steps of %d rows in all, want %d steps (one prefill, then decoding) of %d rows",
					procs, name, steps, r, longest, rows)
			}
		}
		runtime.GOMAXPROCS(old)
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
				p := make([]int, 32)
				for k := range p {
					p[k] = (k*5 + i*17 + 1) % m.cfg.VocabSize
				}
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
