//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// headBwdVariants are the paths BenchmarkBackwardHeadAVX2 compares: each
// sets its switches (and the next undoes them), "old" first.
var headBwdVariants = []struct {
	name string
	set  func()
}{
	{"old", func() { bwd2PrefetchNext = false }},
	{"new", func() { bwd2PrefetchNext = true }},
	{"old2", func() { bwd2PrefetchNext = false }}, // an A/A pair: the run's noise
}

// BenchmarkBackwardHeadAVX2 runs the output layer's backward product of
// the step (matMulTLoRA, dx = dlogits·W + dt·A, W HEAD_ROWS × 1024
// float32, default Qwen3's 151936 words, 622 MB, streamed from memory as
// in the step; A rank 32; M = HEAD_M rows, default 512, rows a vocabulary
// apart as the logits are) on GOMAXPROCS cores with each of
// headBwdVariants, alternated in HEAD_ROUNDS rounds (default 4, the order
// rotating every round). It reports each variant's median GFLOP per
// CPU-second, its share of the 256-bit FMA loop, and the paired medians
// of the first variant's CPU and wall time over each other's (above 1:
// faster than the first).
func BenchmarkBackwardHeadAVX2(b *testing.B) {
	if !bwdAVX2 {
		b.Skip("no AVX2 tiles on this CPU (AVX-512 or no AVX2 and FMA3)")
	}
	env := func(k string, d int) int {
		if n, err := strconv.Atoi(os.Getenv(k)); err == nil && n > 0 {
			return n
		}
		return d
	}
	rows, m, rounds, cols, rank := env("HEAD_ROWS", 151936), env("HEAD_M", 512), env("HEAD_ROUNDS", 4), 1024, 32
	vs := headBwdVariants
	if sel := os.Getenv("HEAD_VARIANTS"); sel != "" {
		vs = vs[:0:0]
		for _, v := range headBwdVariants {
			if strings.Contains(","+sel+",", ","+v.name+",") {
				vs = append(vs, v)
			}
		}
	}
	defer func(p bool) { bwd2PrefetchNext = p }(bwd2PrefetchNext)
	r := newRNG(7)
	w, _, _ := benchMat(rows, cols)
	a, _, _ := benchMat(rank, cols)
	ys := rowsOf(make([]float32, m*rows), m, rows)
	for _, y := range ys {
		fill(y, r, 1)
	}
	ts, xs := gapRows(r, m, rank, true), rowsOf(make([]float32, m*cols), m, cols) // dx rows 4 KiB apart, as the step's
	run := func() { matMulTLoRA(w, ys, a, ts, xs, false) }
	flop := 2 * float64((rows+rank)*cols*m) / 1e9
	wall, cpu := make([][]float64, len(vs)), make([][]float64, len(vs))
	for _, v := range vs { // page everything in on each path
		v.set()
		run()
	}
	for b.Loop() {
		for i := range rounds {
			for k := range vs {
				p := (k + i) % len(vs)
				vs[p].set()
				c0, t0 := processCPU(), time.Now()
				run()
				wall[p] = append(wall[p], time.Since(t0).Seconds())
				cpu[p] = append(cpu[p], processCPU()-c0)
			}
		}
	}
	_, peak := bestPeak(true)
	for p, v := range vs {
		b.Logf("%s: cpu %.3v wall %.3v", v.name, cpu[p], wall[p])
		b.ReportMetric(flop/median(cpu[p]), "GFLOP/cpu-s-"+v.name)
		b.ReportMetric(100*flop/median(cpu[p])/peak, "%fma-"+v.name)
		if p > 0 {
			b.ReportMetric(medianRatio(cpu[0], cpu[p]), fmt.Sprintf("cpu-%s/%s", vs[0].name, v.name))
			b.ReportMetric(medianRatio(wall[0], wall[p]), fmt.Sprintf("wall-%s/%s", vs[0].name, v.name))
		}
	}
}

// BenchmarkTrainStepBwdPrefetch runs the qwen3-wide4 2×512 training step
// (rank-32 LoRA on every target) with bwd2PrefetchNext off and on,
// alternating step by step in one process (the order swapping every
// round), b.N rounds, and logs each side's wall and CPU seconds per step
// and the medians of the rounds' off/on ratios (above 1: on is faster).
func BenchmarkTrainStepBwdPrefetch(b *testing.B) {
	if !bwdAVX2 {
		b.Skip("no AVX2 tiles on this CPU (AVX-512 or no AVX2 and FMA3)")
	}
	defer func(p bool) { bwd2PrefetchNext = p }(bwd2PrefetchNext)
	stepSwitchPairs(b, func(on bool) { bwd2PrefetchNext = on })
}
