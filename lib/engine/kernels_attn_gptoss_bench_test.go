//go:build goexperiment.simd && amd64

package engine

import (
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// BenchmarkAttentionGptOss times one sliding-window layer with sinks on
// gpt-oss-20b's heads (64 query, 8 KV, dim 64, window 128) over one
// sequence of 2048 tokens, forward and backward, in process CPU-ms per op.
func BenchmarkAttentionGptOss(b *testing.B) {
	const n = 2048
	c := Config{Shape: models.Shape{Heads: 64, KVHeads: 8, HeadDim: 64}}
	c.LayerTypes, c.SlidingWindow = []string{"sliding_attention"}, 128
	m := &Model{cfg: c, w: &weights{layers: make([]layerWeights, 1)}}
	m.w.layers[0].sinks = randRows(1, c.Heads, 77)[0]
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	q, k, v := randRows(n, qd, 1), flat(randRows(n, kvd, 2)), flat(randRows(n, kvd, 3))
	datt := randRows(n, qd, 4)
	dq, dk, dv := randRows(n, qd, 5), randRows(n, kvd, 6), randRows(n, kvd, 7)
	ws := &workspace{q: q, att: randRows(n, qd, 8)}
	seq := &kvCache{k: [][]float32{k}, v: [][]float32{v}}
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{seq: seq, pos: i}
	}
	for _, part := range []string{"forward", "backward"} {
		b.Run(part, func(b *testing.B) {
			run := func() { m.attention(ws, rows, 0) }
			if part == "backward" {
				run = func() { attentionBackward(c, 0, m.sinks(0), q, k, v, datt, dq, dk, dv) }
			}
			run()
			var cpu float64
			var wall time.Duration
			for b.Loop() {
				c0, t0 := processCPU(), time.Now()
				run()
				cpu += processCPU() - c0
				wall += time.Since(t0)
			}
			b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms/op")
		})
	}
}
