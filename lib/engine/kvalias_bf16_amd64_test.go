package engine

import (
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestKVAliasBF16Compute: on the bf16 compute path, whose attention packs
// its own bfloat16 copy from the float32 cache, samples whose caches
// alias their prompt's memory file give what their copies give, bit for
// bit.
func TestKVAliasBF16Compute(t *testing.T) {
	needBF16(t)
	aliasAll(t)
	c := Config{Shape: models.Shape{Family: models.Qwen3, VocabSize: 256, Hidden: 256, Intermediate: 384,
		Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 64, RMSNormEps: 1e-6, RopeTheta: 10000,
		MaxPositionEmbeddings: 4096}, BOSTokenID: -1}
	ts := randomTensors(c, 6)
	matricesToBF16(ts)
	m, err := New("alias-bf16", c, ts)
	if err != nil {
		t.Fatal(err)
	}
	m.w.withBF16Compute()
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
