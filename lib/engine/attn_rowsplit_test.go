//go:build goexperiment.simd && amd64

package engine

import (
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestAttentionLoneRowSplitsHeads decodes one row at a long context (its
// work past attnSplitWork), requires that its KV heads become units of
// their own (so two cores share the cache's reads), and that the output
// keeps the bits of attendRow over every head on one goroutine, vector
// kernels on and off, GOMAXPROCS 1 and 3.
func TestAttentionLoneRowSplitsHeads(t *testing.T) {
	for _, kvh := range []int{2, 3} {
		c := Config{Shape: models.Shape{Heads: 2 * kvh, KVHeads: kvh, HeadDim: 128}}
		qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
		n := attnSplitWork/qd + 1 // positions: the row's work just reaches attnSplitWork
		seq := &kvCache{k: [][]float32{flat(randRows(n, kvd, 5))}, v: [][]float32{flat(randRows(n, kvd, 6))}, n: n - 1}
		rows := []row{{seq: seq, pos: n - 1}}
		ws := &workspace{q: randRows(1, qd, 7), att: randRows(1, qd, 8)}
		m := &Model{cfg: c}
		units, _ := m.attnUnits(ws, rows, 0)
		if len(units) != kvh {
			t.Fatalf("kv heads %d, %d positions: %d attention units, want one per KV head", kvh, n, len(units))
		}
		checkAttentionRowsBits(t, m, rows, ws)
	}
}
