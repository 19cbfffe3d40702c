//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
)

// TestTileWPMatchesTileW checks attnTileWP (the weighted sums prefetching
// the values ahead) against attnTileW bit for bit, accumulating into
// nonzero C, over key counts below, at and past its prefetch distance,
// with value rows a cache's KV heads apart.
func TestTileWPMatchesTileW(t *testing.T) {
	if !avx512 || !useSIMD || !simdOK {
		t.Skip("no AVX-512")
	}
	const hd, kvd = 128, 1024
	for _, n := range []int{1, 3, 15, 16, 17, 40, 300} {
		for r := 1; r <= len(attnTileWP); r++ {
			ld := (n + 3) &^ 3
			a := flat(randRows(r, ld, uint64(n)))
			b := flat(randRows(n, kvd, uint64(n+1)))
			want := flat(randRows(r, hd, uint64(n+2)))
			got := append([]float32(nil), want...)
			attnTileW[r-1](&want[0], 4*hd, &a[0], uintptr(4*ld), 4, &b[256], 4*kvd, n)
			attnTileWP[r-1](&got[0], 4*hd, &a[0], uintptr(4*ld), 4, &b[256], 4*kvd, n)
			fuseSameBits(t, fmt.Sprintf("n=%d r=%d", n, r), want, got)
		}
	}
}

// TestLoneRowLongAsmMatchesGo is TestLoneRowAsmMatchesGo at positions
// around and past loneSumsPFBytes (a 128-float head's 512 positions),
// where the sums prefetch the values (attnTileWP) and the scores only the
// keys: attendRow's output must keep the Go vector kernels' bits and the
// scalar path's.
func TestLoneRowLongAsmMatchesGo(t *testing.T) {
	if !avx512 {
		t.Skip("no AVX-512: attendKVHeadAsm does not run")
	}
	for _, sh := range [][3]int{{16, 8, 128}, {32, 8, 128}} {
		for _, withSinks := range []bool{false, true} {
			m := attnLayerModel(sh, withSinks)
			c := m.cfg
			qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
			const npos = 1100
			seq := &kvCache{k: [][]float32{flat(randRows(npos, kvd, 3))}, v: [][]float32{flat(randRows(npos, kvd, 4))}}
			ws := &workspace{q: randRows(1, qd, 1), att: randRows(1, qd, 2), scores: make([][]float32, 1)}
			for _, pos := range []int{510, 511, 512, 513, 514, 515, 530, 1023, 1099} {
				if 8*(pos+1)*c.HeadDim < loneSumsPFBytes && pos > 512 {
					t.Fatalf("position %d is below loneSumsPFBytes: the test no longer covers attnTileWP", pos)
				}
				rows := []row{{seq: seq, pos: pos}}
				run := func(simd, asm bool) []float32 { return attendLoneRow(m, ws, rows, simd, asm) }
				name := fmt.Sprintf("%v sinks=%v pos=%d", sh, withSinks, pos)
				want, got := run(false, false), run(true, true)
				if !bitsEqual(got, want) {
					t.Fatalf("%s: attendKVHeadAsm differs from the scalar path at %s", name, firstDiff(got, want))
				}
			}
		}
	}
}

// TestAttentionBlockedRowsSameBits runs a layer's attention (the unfused
// path's units) over 1, 3 and 20 lone rows past attnBlockedMinPos
// (lowered to reach it with short caches), beside a run of consecutive
// positions, with blocked units (attnBlockedRows: one to eight units a
// row) and without, on GQA shapes with heads of 128, with and without
// sinks: every output must have the same bits.
func TestAttentionBlockedRowsSameBits(t *testing.T) {
	if !avx512 {
		t.Skip("no AVX-512: attendHeadsBlocked does not run")
	}
	defer func(b bool, p int) { attnBlockedRows, attnBlockedMinPos = b, p }(attnBlockedRows, attnBlockedMinPos)
	attnBlockedMinPos = 40
	for _, sh := range [][3]int{{16, 8, 128}, {8, 2, 128}, {16, 4, 128}} {
		for _, withSinks := range []bool{false, true} {
			m := attnLayerModel(sh, withSinks)
			c := m.cfg
			qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
			for _, lone := range []int{1, 3, 20} {
				var rows []row
				for s := range lone {
					pos := 40 + 7*s
					seq := &kvCache{k: [][]float32{flat(randRows(pos+1, kvd, uint64(3+s)))}, v: [][]float32{flat(randRows(pos+1, kvd, uint64(50+s)))}}
					rows = append(rows, row{seq: seq, pos: pos})
				}
				run := &kvCache{k: [][]float32{flat(randRows(60, kvd, 91))}, v: [][]float32{flat(randRows(60, kvd, 92))}}
				for p := 50; p < 60; p++ {
					rows = append(rows, row{seq: run, pos: p})
				}
				att := func(blocked bool) []float32 {
					attnBlockedRows = blocked
					ws := &workspace{q: randRows(len(rows), qd, 1), att: randRows(len(rows), qd, 2)}
					m.attention(ws, rows, 0)
					return flat(ws.att)
				}
				want, got := att(false), att(true)
				name := fmt.Sprintf("%v sinks=%v lone=%d", sh, withSinks, lone)
				if !bitsEqual(got, want) {
					t.Fatalf("%s: blocked units differ at %s", name, firstDiff(got, want))
				}
			}
		}
	}
}
