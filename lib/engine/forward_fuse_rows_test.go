package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestDecodeFuseManyRowsSameBits decodes steps of 4-16 rows (sixteen
// sequences prefilled to different lengths) fused, with every fuse switch
// on and fuseMaxRows at 16, and unfused, and requires the same bits in
// every logit and every cached key and value (the bf16 path's packed
// copies too): Qwen3, Llama 3 with q, k and v biases and GPT-OSS,
// float32 and bfloat16 weights, the bf16 compute path where the CPU has
// it, without adapters, with two (ranks 8 and 4, one without an lm_head)
// and base rows, and with five (more groups than three rows had). It
// fails if the last step did not take the fused fork (its lm_head, or its
// adapter groups), and did with the A-products' states three a matrix.
func TestDecodeFuseManyRowsSameBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer func(v, l, k, h, a, b bool, n int) {
		decodeFuse, fuseLayer, fuseToken, fuseHead, fuseLoRA, fuseBF16, fuseMaxRows = v, l, k, h, a, b, n
	}(decodeFuse, fuseLayer, fuseToken, fuseHead, fuseLoRA, fuseBF16, fuseMaxRows)
	fuseLoRA, fuseBF16, fuseMaxRows = true, true, 16
	for _, arch := range []models.Family{models.Qwen3, models.Llama3, models.GptOss} {
		for _, dtype := range []string{"f32", "bf16", "bf16-compute"} {
			if dtype == "bf16-compute" && !bf16Compute() {
				continue
			}
			m, c := fuseTestModel(t, arch, cutDType(dtype), "fuse-rows-"+string(arch), 11, 5)
			if dtype == "bf16-compute" {
				m.w.withBF16Compute()
			}
			la, lb := fuseTestAdapters(t, c)
			more := []*LoRA{la, nil, lb}
			for i := range 3 {
				l, err := NewLoRA(c, randomLoRA(c, 4, uint64(23+i), false), 4, 8, false)
				if err != nil {
					t.Fatal(err)
				}
				more = append(more, l)
			}
			for _, loras := range [][]*LoRA{nil, {la, nil, lb, la}, more} {
				want := 0 // adapter groups
				for i, l := range loras {
					if l != nil && !slices.Contains(loras[:i], l) {
						want++
					}
				}
				name := fmt.Sprintf("%s %s, %d adapters", arch, dtype, want)
				off, offCaches, _, _ := decodeManyRows(t, m, false, loras)
				on, onCaches, head, groups := decodeManyRows(t, m, true, loras)
				if arch != models.GptOss && !head {
					t.Fatalf("%s: the 16-row step's fork did not run the lm_head", name)
				}
				if groups != want {
					t.Fatalf("%s: the 16-row step's fork had %d adapter groups, want %d", name, groups, want)
				}
				fuseSameBits(t, name+" logits", off, on)
				fuseSameBits(t, name+" caches", offCaches, onCaches)
			}
		}
	}
}

// cutDType is fuseTestModel's dtype for a test's dtype: bf16 for the bf16
// compute path.
func cutDType(dtype string) string {
	if dtype == "bf16-compute" {
		return "bf16"
	}
	return dtype
}

// decodeManyRows prefills sixteen sequences (2-6 positions), then decodes
// steps of 4, 5, 7, 8, 11 and 16 rows (the first sequences, each row
// wanting logits; sequence s with adapter loras[s%len(loras)] when there
// are adapters, base where that is nil), fused (every fuse switch) or
// not, and returns every step's logits, the caches' keys and values (and
// the bf16 path's packed copies), whether the last step's fork ran the
// lm_head and how many adapter groups it had.
func decodeManyRows(t *testing.T, m *Model, fused bool, loras []*LoRA) (logits, caches []float32, head bool, groups int) {
	t.Helper()
	decodeFuse, fuseLayer, fuseToken, fuseHead = fused, fused, fused, fused
	adapter := func(s int) *LoRA {
		if len(loras) == 0 {
			return nil
		}
		return loras[s%len(loras)]
	}
	ws := &workspace{}
	seqs := make([]*kvCache, 16)
	for s := range seqs {
		seqs[s] = m.newCache(16)
		var rows []row
		for p := range 2 + s%5 {
			rows = append(rows, row{seq: seqs[s], token: (7*p + s) % m.cfg.VocabSize, pos: p, logits: p == 1+s%5, lora: adapter(s)})
		}
		for _, l := range m.forward(ws, rows) {
			logits = append(logits, l...)
		}
	}
	for step, r := range []int{4, 5, 7, 8, 11, 16} {
		var rows []row
		for s := range r {
			rows = append(rows, row{seq: seqs[s], token: (13*step + 3*s) % m.cfg.VocabSize, pos: seqs[s].n, logits: true, lora: adapter(s)})
		}
		for _, l := range m.forward(ws, rows) {
			logits = append(logits, l...)
		}
	}
	caches = cachedValues(seqs)
	return logits, caches, ws.fz.head, len(ws.fz.lgroups)
}
