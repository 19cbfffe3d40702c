package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
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

// spreadPrompt is an n-token prompt of the tokens step·k + off, k = 0..n-1,
// within m's vocabulary.
func spreadPrompt(m *Model, n, step, off int) []int {
	p := make([]int, n)
	for k := range p {
		p[k] = (k*step + off) % m.cfg.VocabSize
	}
	return p
}

// sameAsSolo checks each response in got against its solo run and returns
// the decoding rows they cost.
func sameAsSolo(t *testing.T, label string, solo, got []*SampleResponse) int64 {
	t.Helper()
	n := int64(0)
	for i := range got {
		if got[i] == nil {
			t.Fatalf("%s: request %d failed", label, i)
		}
		if d := sameResponse(solo[i], got[i]); d != "" {
			t.Errorf("%s: request %d differs from its solo run: %s", label, i, d)
		}
		n += decodeRows(got[i])
	}
	return n
}

// TestIdenticalPromptsPrefillOnce submits requests with one 64-token
// prompt at once, differing in seed, num_samples, max_tokens and
// temperature, plus one that wants prompt logprobs and one on an adapter:
// each gets exactly its solo result, and, counted by the batcher's row
// counter, the prompt goes through the model once for the base model's
// sharing requests, once for the prompt-logprob request and once for the
// adapter (a different model, whose cache cannot be shared). Submitted
// with the prompt-logprob request first, that request leads the base
// model's others (its cache serves them as any leader's would), so the
// prompt runs twice.
func TestIdenticalPromptsPrefillOnce(t *testing.T) {
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		ad := adapters(t, m)[0]
		p := spreadPrompt(m, 64, 11, 5)
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
		got, rows := sampleQueued(t, m, calls)
		if want := int64(3*len(p)) + sameAsSolo(t, name+" shared prefill", solo, got); rows != want {
			t.Errorf("%s: %d rows ran, want %d (the prompt three times, then one row per generated token)", name, rows, want)
		}
		first := []int{4, 0, 1, 2, 3, 5, 6} // the prompt-logprob request leads
		got, rows = sampleQueued(t, m, permute(calls, first))
		if want := int64(2*len(p)) + sameAsSolo(t, name+" logprob leader", permute(solo, first), got); rows != want {
			t.Errorf("%s: prompt-logprob request first: %d rows ran, want %d (the prompt twice, then one row per generated token)", name, rows, want)
		}
	}
}

// sampleQueued holds m's batch, queues calls in their order (each queued
// before the next is submitted: the batcher admits in queue order, and
// which request leads decides how many prompts run), lets them run
// together and returns their responses and the rows the batch ran.
func sampleQueued(t *testing.T, m *Model, calls []call) ([]*SampleResponse, int64) {
	t.Helper()
	got := make([]*SampleResponse, len(calls))
	release := holdBatch(t, m)
	rows0 := m.batch.rows.Load()
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { got[i], _ = c.m.Sample(context.Background(), c.req) })
		waitQueued(t, m.batch, i+1)
	}
	release()
	wg.Wait()
	return got, m.batch.rows.Load() - rows0
}

// permute is s in the order idx gives.
func permute[T any](s []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, k := range idx {
		out[i] = s[k]
	}
	return out
}

// TestLateIdenticalPromptShares: a request arriving while another with
// the same prompt already generates starts from that request's prompt
// cache (no prompt rows of its own) and still gets its solo result.
func TestLateIdenticalPromptShares(t *testing.T) {
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		p := spreadPrompt(m, 40, 13, 2)
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

// TestFollowerJoinsNextStep: requests with a leader's prompt that arrive
// while it is prefilled (here: during its first stop check, so they are
// admitted once its prompt is complete) draw their first tokens before the
// next forward pass and decode in the same steps as the leader, as
// num_samples would: max_tokens steps in all (one prefill, then one row per
// sequence and token but the last), not one more with the leader alone.
// Each still gets its solo result.
func TestFollowerJoinsNextStep(t *testing.T) {
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		p := spreadPrompt(m, 64, 17, 9)
		const tokens = 6
		late := make([]SampleRequest, 7)
		want := make([]*SampleResponse, len(late))
		for i := range late {
			late[i] = SampleRequest{Prompt: p, MaxTokens: tokens, Temperature: 1, Seed: seedp(int64(20 + i))}
			want[i] = sample(t, m, late[i])
		}
		got := make([]*SampleResponse, len(late))
		var wg sync.WaitGroup
		first := SampleRequest{Prompt: p, MaxTokens: tokens, Temperature: 1, Seed: seedp(19),
			StopFunc: func(gen []int) bool {
				if len(gen) == 1 {
					for i, r := range late {
						wg.Go(func() { got[i], _ = m.Sample(context.Background(), r) })
					}
					waitQueued(t, m.batch, len(late))
				}
				return false
			}}
		steps0, rows0 := m.batch.steps.Load(), m.batch.rows.Load()
		r, err := m.Sample(context.Background(), first)
		if err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		rows := int64(len(p)) + decodeRows(r) + sameAsSolo(t, name+" late", want, got)
		if s, n := m.batch.steps.Load()-steps0, m.batch.rows.Load()-rows0; s != tokens || n != rows {
			t.Errorf("%s: %d steps of %d rows, want %d steps (one prefill, then all 8 sequences together) of %d rows", name, s, n, tokens, rows)
		}
	}
}

// TestFollowerFailsAtFirstToken: a follower whose StopFunc panics at its
// first token (drawn before the step's forward pass) gets the panic back,
// runs no row in that step (its response is the caller's once it
// failed), and its leader is unaffected.
func TestFollowerFailsAtFirstToken(t *testing.T) {
	m := mustLoad(t, models.TinyLlama)
	p := []int{models.TinyBOS, 'f', 'o', 'l'}
	lead := SampleRequest{Prompt: p, MaxTokens: 8, Temperature: 1, Seed: seedp(31)}
	want := sample(t, m, lead)
	bad := SampleRequest{Prompt: p, MaxTokens: 8, Temperature: 1, Seed: seedp(32),
		StopFunc: func([]int) bool { panic("follower's stop func broke") }}
	panicked := make(chan any, 1)
	lead.StopFunc = func(gen []int) bool {
		if len(gen) == 1 {
			go func() {
				defer func() { panicked <- recover() }()
				_, _ = m.Sample(context.Background(), bad)
			}()
			waitQueued(t, m.batch, 1)
		}
		return false
	}
	rows0 := m.batch.rows.Load()
	got := sample(t, m, lead)
	if d := sameResponse(want, got); d != "" {
		t.Errorf("leader beside a failing follower: %s", d)
	}
	if p := <-panicked; p == nil || !strings.Contains(fmt.Sprint(p), "follower's stop func broke") {
		t.Errorf("Sample with a panicking StopFunc: recovered %v", p)
	}
	if n, w := m.batch.rows.Load()-rows0, int64(len(p))+decodeRows(got); n != w {
		t.Errorf("%d rows ran, want %d (the failed follower's none)", n, w)
	}
}
