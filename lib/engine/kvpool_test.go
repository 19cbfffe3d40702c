package engine

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"
)

// TestKVPoolReusedSameBits decodes on a model whose batcher kept a
// finished request's cache (kvPool): the next requests, one sample and
// several (the clones), take pooled caches, which a longer request
// filled before, and must give the bits a fresh model gives them.
func TestKVPoolReusedSameBits(t *testing.T) {
	name := TinyModels()[0]
	load := func() *Model {
		m, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	sample := func(m *Model, prompt []int, n, gen int, seed int64) []Sequence {
		resp, err := m.Sample(context.Background(), SampleRequest{Prompt: prompt, NumSamples: n, MaxTokens: gen, Temperature: 1, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		waitIdle(t, m)
		return resp.Sequences
	}
	m := load()
	sample(m, []int{5, 6, 7, 8, 9, 10, 11}, 2, 40, 9)
	pooled := slices.Clone(m.batch.kv.free)
	if len(pooled) == 0 {
		t.Fatal("no cache went to the pool after a request finished")
	}
	for _, tc := range []struct {
		prompt []int
		n, gen int
	}{{[]int{1, 2, 3}, 1, 12}, {[]int{4, 3, 2, 1}, 3, 9}} {
		got := sample(m, tc.prompt, tc.n, tc.gen, 3)
		if tc.n == 1 { // it took a pooled cache and gave it back: nothing new
			for _, c := range m.batch.kv.free {
				if !slices.Contains(pooled, c) {
					t.Fatalf("prompt %v: a fresh cache went to the pool; the request did not take a pooled one", tc.prompt)
				}
			}
		}
		want := sample(load(), tc.prompt, tc.n, tc.gen, 3)
		for i := range want {
			if !slices.Equal(got[i].Tokens, want[i].Tokens) || !slices.EqualFunc(got[i].Logprobs, want[i].Logprobs, func(a, b float32) bool {
				return math.Float32bits(a) == math.Float32bits(b)
			}) {
				t.Fatalf("prompt %v sample %d: pooled caches gave %v %v, fresh ones %v %v", tc.prompt, i, got[i].Tokens, got[i].Logprobs, want[i].Tokens, want[i].Logprobs)
			}
		}
	}
	reused := 0
	for _, c := range m.batch.kv.free {
		if slices.Contains(pooled, c) {
			reused++
		}
	}
	if reused == 0 || m.batch.kv.bytes > kvPoolBytes {
		t.Fatalf("pool after the requests: %d of the first caches kept (want some), %d bytes (at most %d)", reused, m.batch.kv.bytes, kvPoolBytes)
	}
}

// waitIdle waits for m's batcher to finish its stepper: a request's
// caches go to the pool when the stepper drops it, after Sample returns.
func waitIdle(t *testing.T, m *Model) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		m.batch.mu.Lock()
		running := m.batch.running
		m.batch.mu.Unlock()
		if !running {
			return
		}
	}
	t.Fatal("the batcher's stepper did not finish")
}
