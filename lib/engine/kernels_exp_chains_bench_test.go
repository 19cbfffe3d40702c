//go:build goexperiment.simd && amd64

package engine

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkExp4Chains times the loss's exponential passes over a 151936-
// word row with exp4Chains off, on, and on with the generated kernels
// (expAVX2), alternating in rounds in one process
// (EXP_ROUNDS, 9 by default), and logs each side's median and range of
// CPU-ns and wall-ns per logit: the interleaving keeps a shared machine's
// load from favouring either side.
func BenchmarkExp4Chains(b *testing.B) {
	const vocab = 151936
	rounds := 9
	if s := os.Getenv("EXP_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	r := newRNG(5)
	logits, row, e := make([]float32, vocab), make([]float32, vocab), make([]float64, vocab)
	for i := range logits {
		logits[i] = (2*r.uniform32() - 1) * 8
	}
	cases := []struct {
		name string
		fn   func()
	}{
		{"lossRowGrad", func() {
			copy(row, logits)
			_, sum := logSumExpKeep(e, row)
			scaleExps(row, e, -1/sum)
		}},
		{"logSumExp", func() { logSumExp(logits, 1) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			defer func(c, a bool) { exp4Chains, expAVX2 = c, a }(exp4Chains, expAVX2)
			cfgs := [][2]bool{{false, false}, {true, false}, {true, true}}
			var wall, cpu [3][]float64
			for b.Loop() {
				for range rounds {
					for i, cf := range cfgs {
						exp4Chains, expAVX2 = cf[0], cf[1]
						c.fn()
						n, t0, c0 := 0, time.Now(), processCPU()
						for n < 3 || time.Since(t0) < 40*time.Millisecond {
							c.fn()
							n++
						}
						wall[i] = append(wall[i], time.Since(t0).Seconds()*1e9/float64(n*vocab))
						cpu[i] = append(cpu[i], (processCPU()-c0)*1e9/float64(n*vocab))
					}
				}
			}
			for i := range cfgs {
				slices.Sort(wall[i])
				slices.Sort(cpu[i])
			}
			k := len(wall[0])
			for i, cf := range cfgs {
				b.Logf("exp4Chains %5v expAVX2 %5v: wall %.3f [%.3f-%.3f] ns/logit  cpu %.3f [%.3f-%.3f] CPU-ns/logit  (old/new wall %.3f, cpu %.3f)",
					cf[0], cf[1], wall[i][k/2], wall[i][0], wall[i][k-1], cpu[i][k/2], cpu[i][0], cpu[i][k-1], wall[0][k/2]/wall[i][k/2], cpu[0][k/2]/cpu[i][k/2])
			}
		})
	}
}
