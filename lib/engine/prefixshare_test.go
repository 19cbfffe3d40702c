package engine

import (
	"context"
	"sync"
	"testing"
)

// decodeRows is the forward rows a response's samples cost after the prompt:
// one per generated token but the last.
func decodeRows(r *SampleResponse) int64 {
	n := int64(0)
	for _, s := range r.Sequences {
		n += int64(max(0, len(s.Tokens)-1))
	}
	return n
}

// TestIdenticalPromptsPrefillOnce submits requests with one 64-token
// prompt at once, differing in seed, num_samples, max_tokens and
// temperature, plus one that wants prompt logprobs and one on an adapter:
// each gets exactly its solo result, and, counted by the batcher's row
// counter, the prompt goes through the model once for the base model's
// sharing requests, once for the prompt-logprob request and once for the
// adapter (a different model, whose cache cannot be shared).
func TestIdenticalPromptsPrefillOnce(t *testing.T) {
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		ad := adapters(t, m)[0]
		p := make([]int, 64)
		for k := range p {
			p[k] = (k*11 + 5) % m.cfg.VocabSize
		}
		calls := []call{
			{m, SampleRequest{Prompt: p, MaxTokens: 9, Temperature: 1, Seed: seedp(1)}},
			{m, SampleRequest{Prompt: p, MaxTokens: 5, Temperature: 0.8, Seed: seedp(2), NumSamples: 3}},
			{m, SampleRequest{Prompt: p, MaxTokens: 7, Temperature: 0}},
			{m, SampleRequest{Prompt: p, MaxTokens: 0}},
			{m, SampleRequest{Prompt: p, MaxTokens: 4, Temperature: 1, Seed: seedp(3), PromptLogprobs: true}},
			{ad, SampleRequest{Prompt: p, MaxTokens: 6, Temperature: 1, Seed: seedp(4)}},
			{m, SampleRequest{Prompt: p, MaxTokens: 8, Temperature: 1.2, Seed: seedp(5), TopK: 7}},
		}
		solo := make([]*SampleResponse, len(calls))
		for i, c := range calls {
			solo[i] = sample(t, c.m, c.req)
		}
		got := make([]*SampleResponse, len(calls))
		release := holdBatch(t, m)
		rows0 := m.batch.rows.Load()
		var wg sync.WaitGroup
		for i, c := range calls {
			wg.Go(func() { got[i], _ = c.m.Sample(context.Background(), c.req) })
		}
		waitQueued(t, m.batch, len(calls))
		release()
		wg.Wait()
		want := int64(3 * len(p))
		for i := range calls {
			if got[i] == nil {
				t.Fatalf("%s request %d failed", name, i)
			}
			if d := sameResponse(solo[i], got[i]); d != "" {
				t.Errorf("%s request %d: shared prefill differs from solo: %s", name, i, d)
			}
			want += decodeRows(got[i])
		}
		if r := m.batch.rows.Load() - rows0; r != want {
			t.Errorf("%s: %d rows ran, want %d (the prompt three times, then one row per generated token)", name, r, want)
		}
	}
}

// TestLateIdenticalPromptShares: a request arriving while another with
// the same prompt already generates starts from that request's prompt
// cache (no prompt rows of its own) and still gets its solo result.
func TestLateIdenticalPromptShares(t *testing.T) {
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		p := make([]int, 40)
		for k := range p {
			p[k] = (k*13 + 2) % m.cfg.VocabSize
		}
		late := SampleRequest{Prompt: p, MaxTokens: 6, Temperature: 1, Seed: seedp(8), NumSamples: 2}
		want := sample(t, m, late)
		var got *SampleResponse
		var wg sync.WaitGroup
		first := SampleRequest{Prompt: p, MaxTokens: 20, Temperature: 1, Seed: seedp(7),
			StopFunc: func(gen []int) bool {
				if len(gen) == 3 {
					wg.Go(func() {
						var err error
						if got, err = m.Sample(context.Background(), late); err != nil {
							t.Error(err)
						}
					})
					waitQueued(t, m.batch, 1)
				}
				return false
			}}
		rows0 := m.batch.rows.Load()
		r, err := m.Sample(context.Background(), first)
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if got == nil {
			t.Fatalf("%s: the late request failed", name)
		}
		if d := sameResponse(want, got); d != "" {
			t.Errorf("%s: late request differs from solo: %s", name, d)
		}
		if n, w := m.batch.rows.Load()-rows0, int64(len(p))+decodeRows(r)+decodeRows(got); n != w {
			t.Errorf("%s: %d rows ran, want %d (the prompt once)", name, n, w)
		}
	}
}
