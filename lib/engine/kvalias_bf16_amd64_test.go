package engine

import "testing"

// TestKVAliasBF16Compute: on the bf16 compute path, whose attention packs
// its own bfloat16 copy from the float32 cache, samples whose caches
// alias their prompt's memory file give what their copies give, bit for
// bit.
func TestKVAliasBF16Compute(t *testing.T) {
	m, _ := bf16ComputeQwen3(t, "alias-bf16", 256, 384, 6)
	aliasAll(t)
	if !m.bf16Attention(0) {
		t.Fatal("the test's model does not take the bf16 path's attention")
	}
	calls := aliasCalls(m, 150)
	run := func() []*SampleResponse {
		out := make([]*SampleResponse, len(calls))
		for i, c := range calls {
			out[i] = sample(t, c.m, c.req)
		}
		return out
	}
	kvAliasPrefix = false
	copied := run()
	kvAliasPrefix = true
	rows0 := kvAliasRows.Load()
	got := run()
	sameAsSolo(t, "bf16 compute, aliased against copies", copied, got)
	// One request at a time: the samples of the two with num_samples > 1.
	if k := kvAliasRows.Load() - rows0; k != 7 {
		t.Errorf("%d caches aliased, want 7", k)
	}
	waitReleased(t, m, "bf16 compute")
}
