//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// attnBlockSeqs are the sequences of one step in
// TestAttentionBlocksMatchRows: {cached positions, new rows}. Runs that
// end in a partial block, from position 0 and mid-cache, a run of two, a
// single decode row, and a run shorter than a block mid-cache.
var attnBlockSeqs = [][2]int{{0, 2*attnRows + 5}, {5, attnRows + 4}, {7, 1}, {0, 2}, {13, 9}}

// TestAttentionBlocksMatchRows runs the forward attention of a step that
// holds several sequences (blocked runs and single rows) with the vector
// kernels on and off under GOMAXPROCS 1 and 3, and requires the bits of
// the per-row scalar path (attendRow for every row, one goroutine).
//
// Head dim 264 is past packMaxHead: the kernels read the cache in place.
func TestAttentionBlocksMatchRows(t *testing.T) {
	for _, hd := range []int{8, 12, 16, 20, 128, 264} {
		for _, group := range qemuFew([]int{1, 2, 3, 4}, []int{1, 3}) {
			for _, kvh := range qemuFew([]int{1, 2}, []int{2}) {
				c := Config{Shape: models.Shape{Heads: group * kvh, KVHeads: kvh, HeadDim: hd}}
				checkAttentionBlocks(t, c)
			}
		}
	}
}

func checkAttentionBlocks(t *testing.T, c Config) {
	t.Helper()
	m, rows, ws := attnBlockStep(c)
	checkAttentionRowsBits(t, m, rows, ws)
}

// checkAttentionRowsBits runs m's layer-0 attention over rows on the
// blocked path (vector kernels on and off, GOMAXPROCS 1 and 3) and
// requires the bits of attendRow for every row, scalar, one goroutine.
func checkAttentionRowsBits(t *testing.T, m *Model, rows []row, ws *workspace) {
	t.Helper()
	c := m.cfg
	var ref []float32
	withSIMD(false, func() {
		ws.scores = make([][]float32, 1)
		for i := range rows {
			m.attendRow(ws, rows, i, 0, 0, 0, c.KVHeads)
		}
		ref = flat(ws.att)
	})
	for _, procs := range []int{1, 3} {
		for _, vec := range []bool{false, true} {
			for _, a := range ws.att { // garbage the step must overwrite
				for i := range a {
					a[i] = 7
				}
			}
			prev := runtime.GOMAXPROCS(procs)
			withSIMD(vec, func() { m.attention(ws, rows, 0) })
			runtime.GOMAXPROCS(prev)
			if got := flat(ws.att); !bitsEqual(got, ref) {
				t.Fatalf("heads=%d kv=%d hd=%d GOMAXPROCS=%d simd=%v: blocked attention differs from the per-row scalar path at element %s",
					c.Heads, c.KVHeads, c.HeadDim, procs, vec, firstDiff(got, ref))
			}
		}
	}
}

// attnBlockStep builds the rows of attnBlockSeqs with random caches and
// queries.
func attnBlockStep(c Config) (*Model, []row, *workspace) {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	var rows []row
	for s, sq := range attnBlockSeqs {
		n := sq[0] + sq[1]
		seed := uint64(100*s + kvd)
		seq := &kvCache{k: [][]float32{flat(randRows(n, kvd, seed))}, v: [][]float32{flat(randRows(n, kvd, seed+1))}, n: sq[0]}
		for p := sq[0]; p < n; p++ {
			rows = append(rows, row{seq: seq, pos: p})
		}
	}
	ws := &workspace{q: randRows(len(rows), qd, uint64(qd)), att: randRows(len(rows), qd, 9)}
	return &Model{cfg: c}, rows, ws
}

func firstDiff(a, b []float32) string {
	for i := range a {
		if !bitsEqual(a[i:i+1], b[i:i+1]) {
			return fmt.Sprintf("%d (%g vs %g)", i, a[i], b[i])
		}
	}
	return "none"
}

// TestAttentionBlocksRowsNotOneSlab: output rows that are not one slab
// (rows padded apart) take blockScratch.pack's scratch and copy, and
// still give attendRow's bits; rows of one slab are written in place
// (pack hands out the rows themselves: the direct path the other block
// tests run).
func TestAttentionBlocksRowsNotOneSlab(t *testing.T) {
	for _, hd := range []int{16, 128} {
		for _, group := range []int{1, 2, 3} {
			c := Config{Shape: models.Shape{Heads: group * 2, KVHeads: 2, HeadDim: hd}}
			m, rows, ws := attnBlockStep(c)
			qd := c.Heads * hd
			slab := slices.Clone(ws.att)
			padded := make([]float32, len(rows)*(qd+16))
			for i, a := range ws.att {
				ws.att[i] = padded[i*(qd+16) : i*(qd+16)+qd]
				copy(ws.att[i], a)
			}
			var b blockScratch
			if _, _, direct := b.pack(ws, 0, 3, hd, group, hd); direct {
				t.Fatalf("pack writes in place into rows %d floats apart", qd+16)
			}
			checkAttentionRowsBits(t, m, rows, ws)
			ws.att = slab
			if _, outs, direct := b.pack(ws, 1, 3, hd, group, hd); !direct || &outs[group][0] != &ws.att[2][hd] {
				t.Fatalf("pack does not hand out one slab's rows (direct %v)", direct)
			}
		}
	}
}
