//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// BenchmarkAttentionLong times one layer's attention of a single sequence
// of 512 and 2048 tokens on Qwen3-0.6B's heads (16 query, 8 KV, dim 128),
// forward (the blocked prefill) and backward, in process CPU-ms per op
// beside wall time: on a shared machine CPU time is the steadier figure,
// and their ratio shows whether both cores were busy.
func BenchmarkAttentionLong(b *testing.B) {
	c := Config{Shape: models.Shape{Heads: 16, KVHeads: 8, HeadDim: 128}}
	for _, n := range []int{512, 2048} {
		for _, part := range []string{"forward", "backward"} {
			b.Run(fmt.Sprintf("%s%d", part, n), func(b *testing.B) {
				run := attnLongRun(c, part, n)
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
}

// BenchmarkAttention512Bit runs BenchmarkAttentionLong's cases with the
// 512-bit attention kernels and 8-lane exponentials on and off (the
// avx512 switch) in alternation and reports each
// side's least CPU time over the iterations (the figure a loaded machine
// disturbs least) and their ratio.
func BenchmarkAttention512Bit(b *testing.B) {
	if !avx512 {
		b.Skip("no AVX-512 on this CPU")
	}
	c := Config{Shape: models.Shape{Heads: 16, KVHeads: 8, HeadDim: 128}}
	for _, n := range []int{512, 2048} {
		for _, part := range []string{"forward", "backward"} {
			b.Run(fmt.Sprintf("%s%d", part, n), func(b *testing.B) {
				run := attnLongRun(c, part, n)
				best := [2]float64{math.Inf(1), math.Inf(1)}
				for b.Loop() {
					for i, on := range []bool{true, false} {
						avx512 = on
						c0 := processCPU()
						run()
						best[i] = min(best[i], processCPU()-c0)
					}
					avx512 = true
				}
				b.ReportMetric(best[0]*1e3, "cpu-ms-512")
				b.ReportMetric(best[1]*1e3, "cpu-ms-256")
				b.ReportMetric(best[1]/best[0], "x-256")
			})
		}
	}
}

func attnLongRun(c Config, part string, n int) func() {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	q, k, v := randRows(n, qd, 1), flat(randRows(n, kvd, 2)), flat(randRows(n, kvd, 3))
	if part == "backward" {
		datt := randRows(n, qd, 4)
		dq, dk, dv := randRows(n, qd, 5), randRows(n, kvd, 6), randRows(n, kvd, 7)
		return func() { attentionBackward(c, 0, nil, q, k, v, datt, dq, dk, dv) }
	}
	m := &Model{cfg: c}
	ws := &workspace{q: q, att: randRows(n, qd, 8)}
	seq := &kvCache{k: [][]float32{k}, v: [][]float32{v}}
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{seq: seq, pos: i}
	}
	return func() { m.attention(ws, rows, 0) }
}
