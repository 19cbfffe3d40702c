package engine

import (
	"math"
	"slices"
	"testing"
)

// TestBF16AttentionOwnRowsSameBits runs the bf16 path's attention of
// tiny models' layers (full attention, and GPT-OSS's sliding windows
// with sinks) with the tiles' rows past a block's own left as they are
// (bf16AttnOwnRows), each unit on a work whose every element is a NaN,
// in blocks of one position (decoding) and of up to 32 query rows
// (prefill), and wants the bits the attention has with the rows
// cleared.
func TestBF16AttentionOwnRowsSameBits(t *testing.T) {
	needBF16(t)
	defer func(v bool) { bf16AttnOwnRows = v }(bf16AttnOwnRows)
	const n = 230
	nan16, nan32 := uint16(0x7fc1), float32(math.NaN())
	for _, name := range []string{"tinker-local/tiny-qwen3", "tinker-local/tiny-gpt-oss"} {
		_, bf := loadBF16Pair(t, name)
		c := bf.cfg
		for layer := range 2 {
			a := newAttnCase(bf, layer, n, uint64(5+layer))
			var want [][]float32
			bf16AttnOwnRows = false
			withAMX(false, func() { want = a.run(0, n) }) // also packs the cache
			bf16AttnOwnRows = true
			rows := make([]row, n)
			for i := range rows {
				rows[i] = row{seq: a.cache, pos: i}
			}
			ws := &workspace{q: a.q, att: newOutputs(n, len(a.q[0]))}
			per := 32 / (c.Heads / c.KVHeads)
			for _, block := range []int{1, per} {
				for i := range ws.att {
					fillF32(ws.att[i], nan32)
				}
				for i := 0; i < n; i += block {
					for h := range c.KVHeads {
						ld := bf16Cols(n + 32)
						w := &bf16AttnWork{q: make([]uint16, 32*c.HeadDim), p: make([]uint16, 32*ld),
							sc: make([]float32, 32*ld), out: make([]float32, 32*c.HeadDim)}
						for _, s := range [][]uint16{w.q, w.p} {
							for k := range s {
								s[k] = nan16
							}
						}
						fillF32(w.sc, nan32)
						fillF32(w.out, nan32)
						withAMX(false, func() {
							bf.attendBF16(ws, rows, bf16Unit{i: i, n: min(block, n-i), kvh: h, kv: &a.cache.bf16.kv[layer][h]}, layer, w)
						})
					}
				}
				for p := range want {
					if !slices.Equal(want[p], ws.att[p]) {
						t.Fatalf("%s layer %d, blocks of %d: position %d differs with the rows past the block's own left as NaNs", name, layer, block, p)
					}
				}
			}
		}
	}
}
