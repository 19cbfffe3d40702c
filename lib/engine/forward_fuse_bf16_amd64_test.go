package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestDecodeFuseBF16SameBits is TestDecodeFuseSameBits on the bf16 compute
// path (fuseBF16): Qwen3, Llama 3 with q, k and v biases and GPT-OSS
// (sinks, a sliding window, q, k and v fused beside its mixture-of-experts
// layers), without adapters and with two (ranks 8 and 4, one with an
// lm_head adapter). Every logit, cached key and value, and the packed
// bfloat16 caches and their counts the same bits fused in each shape as
// unfused; it fails if the steps did not take the fused fork (a packed
// input of the down phase, the lm_head in the fork) or if the fork's
// rounding were left out (the float32 products' bits differ).
func TestDecodeFuseBF16SameBits(t *testing.T) {
	needBF16(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer func(v, l, k, h, a, b bool) {
		decodeFuse, fuseLayer, fuseToken, fuseHead, fuseLoRA, fuseBF16 = v, l, k, h, a, b
	}(decodeFuse, fuseLayer, fuseToken, fuseHead, fuseLoRA, fuseBF16)
	fuseLoRA, fuseBF16 = true, true
	for _, arch := range []models.Family{models.Qwen3, models.Llama3, models.GptOss} {
		m, c := fuseTestModel(t, arch, "bf16", "fuse-bf16-"+string(arch), 11, 5)
		plain, _, _ := decodeSteps(t, m, 0, nil) // the float32 compute path
		m.w.withBF16Compute()
		decodeFuse = true // decodeSteps(…, 0, …) left it off
		lw := &m.w.layers[0]
		if lw.q.vn == nil || !m.bf16Attention(0) || fuseWorkers(nil, make([][]float32, 1), lw.q, lw.k, lw.v) == 0 {
			t.Fatalf("%s: the test's shape does not take the bf16 path's fused fork", arch)
		}
		la, lb := fuseTestAdapters(t, c)
		for _, loras := range [][]*LoRA{nil, {la, nil, lb, la}} {
			name := fmt.Sprintf("%s bf16 compute, %d adapters", arch, len(loras))
			logitsOff, cachesOff, _ := decodeSteps(t, m, 0, loras)
			if loras == nil && slices.Equal(plain, logitsOff) {
				t.Fatalf("%s: the bf16 path gave the float32 path's logits", name)
			}
			for forks := 1; forks <= 4; forks++ {
				logitsOn, cachesOn, head := decodeSteps(t, m, forks, loras)
				what := fmt.Sprintf("%s, %s:", name, [...]string{"", "forks a product", "a fork a layer", "a fork a step", "a fork a step with the lm_head"}[forks])
				if forks == 4 && arch != models.GptOss && !head {
					t.Fatalf("%s the decoding steps' fork did not run the lm_head", what)
				}
				fuseSameBits(t, what+" logits", logitsOff, logitsOn)
				fuseSameBits(t, what+" caches", cachesOff, cachesOn)
			}
		}
	}
}
