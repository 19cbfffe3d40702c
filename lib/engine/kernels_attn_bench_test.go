//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// BenchmarkAttention times the attention products alone: the forward of
// one decode row at position 511, the forward of a 512-position prefill
// (one sequence, blocked kernels) and attentionBackward over 128 positions,
// on the tiny models' head shapes and Qwen3-0.6B's, with the vector kernels
// and (x-scalar) the scalar ones in the same run.
func BenchmarkAttention(b *testing.B) {
	for _, sh := range [][3]int{{4, 2, 16}, {4, 2, 32}, {16, 8, 128}} {
		c := Config{Shape: models.Shape{Heads: sh[0], KVHeads: sh[1], HeadDim: sh[2]}}
		for _, part := range []string{"decode512", "prefill512", "backward128"} {
			b.Run(fmt.Sprintf("h%d-kv%d-d%d/%s", sh[0], sh[1], sh[2], part), func(b *testing.B) {
				run := attnBenchRun(c, part)
				var vec, scalar time.Duration
				for b.Loop() {
					t0 := time.Now()
					run()
					vec += time.Since(t0)
					withSIMD(false, func() {
						t0 = time.Now()
						run()
						scalar += time.Since(t0)
					})
				}
				b.ReportMetric(float64(vec.Nanoseconds())/float64(b.N), "ns/op-vec")
				b.ReportMetric(scalar.Seconds()/vec.Seconds(), "x-scalar")
			})
		}
	}
}

func attnBenchRun(c Config, part string) func() {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	if part == "backward128" {
		const n = 128
		q, k, v, datt := randRows(n, qd, 1), flat(randRows(n, kvd, 2)), flat(randRows(n, kvd, 3)), randRows(n, qd, 4)
		dq, dk, dv := randRows(n, qd, 5), randRows(n, kvd, 6), randRows(n, kvd, 7)
		return func() { attentionBackward(c, 0, nil, q, k, v, datt, dq, dk, dv) }
	}
	const n = 512
	m := &Model{cfg: c}
	if part == "prefill512" {
		ws := &workspace{q: randRows(n, qd, 1), att: randRows(n, qd, 2)}
		seq := &kvCache{k: [][]float32{flat(randRows(n, kvd, 3))}, v: [][]float32{flat(randRows(n, kvd, 4))}}
		rows := make([]row, n)
		for i := range rows {
			rows[i] = row{seq: seq, pos: i}
		}
		return func() { m.attention(ws, rows, 0) }
	}
	ws := &workspace{q: randRows(1, qd, 1), att: randRows(1, qd, 2), scores: make([][]float32, 1)}
	seq := &kvCache{k: [][]float32{flat(randRows(n, kvd, 3))}, v: [][]float32{flat(randRows(n, kvd, 4))}}
	rows := []row{{seq: seq, pos: n - 1}}
	return func() { m.attendRow(ws, rows, 0, 0, 0, 0, m.cfg.KVHeads) }
}
