//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestLoneRowAsmMatchesGo decodes one row at every position 0..299 (every
// remainder of the score kernel's eight- and four-key groups) on GQA
// shapes with groups of 1-8 query heads (the score kernel's one to four
// and the chunks past it), head dims 64 and 128, with and without sinks,
// and requires attendRow's output with the generated kernels
// (attendKVHeadAsm) to have the bits of the Go vector kernels and of the
// scalar path. The scores buffer starts short and dirty each time, so a
// kernel writing past its padding or reading stale scores shows.
func TestLoneRowAsmMatchesGo(t *testing.T) {
	if !avx512 {
		t.Skip("no AVX-512: attendKVHeadAsm does not run")
	}
	shapes := [][3]int{{16, 8, 128}, {32, 8, 128}, {8, 8, 64}, {6, 2, 64}, {16, 2, 64}, {10, 2, 64}}
	npos := 300
	if testing.Short() {
		npos = 80
	}
	for _, sh := range shapes {
		for _, withSinks := range []bool{false, true} {
			m := attnLayerModel(sh, withSinks)
			c := m.cfg
			qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
			seq := &kvCache{k: [][]float32{flat(randRows(npos, kvd, 3))}, v: [][]float32{flat(randRows(npos, kvd, 4))}}
			ws := &workspace{q: randRows(1, qd, 1), att: randRows(1, qd, 2), scores: make([][]float32, 1)}
			for pos := range npos {
				rows := []row{{seq: seq, pos: pos}}
				run := func(simd, asm bool) []float32 { return attendLoneRow(m, ws, rows, simd, asm) }
				name := fmt.Sprintf("%v sinks=%v pos=%d", sh, withSinks, pos)
				want, vec, got := run(false, false), run(true, false), run(true, true)
				if !bitsEqual(vec, want) {
					t.Fatalf("%s: the Go vector kernels differ from the scalar path at %s", name, firstDiff(vec, want))
				}
				if !bitsEqual(got, want) {
					t.Fatalf("%s: attendKVHeadAsm differs from the scalar path at %s", name, firstDiff(got, want))
				}
			}
		}
	}
}

// attnLayerModel is a one-layer model of shape sh (heads, KV heads, head
// dim) for attention tests, with seeded sinks when withSinks.
func attnLayerModel(sh [3]int, withSinks bool) *Model {
	c := Config{Shape: models.Shape{Heads: sh[0], KVHeads: sh[1], HeadDim: sh[2]}}
	m := &Model{cfg: c, w: &weights{layers: make([]layerWeights, 1)}}
	if withSinks {
		m.w.layers[0].sinks = randRows(1, c.Heads, 77)[0]
	}
	return m
}

// attendLoneRow is attendRow's output for the one row in rows with the
// vector kernels (simd) and the generated ones (asm) on or off, from a
// short scores buffer and a dirty output, so a kernel that writes past
// its padding or reads stale scores shows.
func attendLoneRow(m *Model, ws *workspace, rows []row, simd, asm bool) []float32 {
	ws.scores[0] = make([]float32, 3)
	for i := range ws.att[0] {
		ws.att[0][i] = 7
	}
	defer func(old bool) { loneRowAsm = old }(loneRowAsm)
	loneRowAsm = asm
	withSIMD(simd, func() { m.attendRow(ws, rows, 0, 0, 0, 0, m.cfg.KVHeads) })
	return append([]float32(nil), ws.att[0]...)
}
