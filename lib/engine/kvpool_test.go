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
	// A budget of its own: other tests' models share kvPoolBudget.
	budget := &kvBudget{limit: kvPoolBytes}
	m.batch.kv.budget = budget
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
	if reused == 0 || budget.used.Load() != int64(m.batch.kv.bytes) {
		t.Fatalf("pool after the requests: %d of the first caches kept (want some), %d bytes, the budget counts %d", reused, m.batch.kv.bytes, budget.used.Load())
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

// smallCache is a one-layer cache of kw = vw = 4 floats with room for n
// positions: 32·n bytes.
func smallCache(n int) *kvCache {
	return &kvCache{k: [][]float32{make([]float32, 4*n)}, v: [][]float32{make([]float32, 4*n)}, kw: 4, vw: 4}
}

// TestKVPoolBudgetShared gives two models' pools one budget: what the
// first keeps leaves the second less room, and a cache taken back out
// gives the room back.
func TestKVPoolBudgetShared(t *testing.T) {
	b := &kvBudget{limit: 3 * 32 * 10} // three caches of 10 positions
	p, q := &kvPool{budget: b}, &kvPool{budget: b}
	defer p.dropIdle(time.Now().Add(kvPoolIdle))
	defer q.dropIdle(time.Now().Add(kvPoolIdle))
	p.put(smallCache(10))
	p.put(smallCache(10))
	q.put(smallCache(10))
	q.put(smallCache(10)) // over the shared limit
	if len(p.free) != 2 || len(q.free) != 1 || b.used.Load() != 3*320 {
		t.Fatalf("pools hold %d and %d caches, budget %d bytes; want 2, 1 and 960", len(p.free), len(q.free), b.used.Load())
	}
	if p.take(1, 4, 4, 5) == nil {
		t.Fatal("take found no cache of 10 positions for 5")
	}
	q.put(smallCache(10))
	if len(q.free) != 2 || b.used.Load() != 3*320 {
		t.Fatalf("after a take from the first pool the second holds %d caches, budget %d; want 2 and 960", len(q.free), b.used.Load())
	}
}

// TestKVPoolDropsWhenIdle: a pool keeps its caches while it is used and
// drops them, with their share of the budget, once it has been idle for
// kvPoolIdle.
func TestKVPoolDropsWhenIdle(t *testing.T) {
	b := &kvBudget{limit: 1 << 20}
	p := &kvPool{budget: b}
	p.put(smallCache(10))
	p.dropIdle(time.Now().Add(kvPoolIdle / 2))
	if len(p.free) != 1 || b.used.Load() != 320 || p.sweep == nil {
		t.Fatalf("half the idle time after a put: %d caches, %d bytes, sweep armed %v; want 1, 320, true", len(p.free), b.used.Load(), p.sweep != nil)
	}
	p.dropIdle(time.Now().Add(kvPoolIdle + time.Second))
	if len(p.free) != 0 || p.bytes != 0 || b.used.Load() != 0 || p.sweep != nil {
		t.Fatalf("after kvPoolIdle: %d caches, %d bytes, budget %d, sweep armed %v; want all gone", len(p.free), p.bytes, b.used.Load(), p.sweep != nil)
	}
	if p.take(1, 4, 4, 1) != nil {
		t.Fatal("an emptied pool gave a cache")
	}
}
