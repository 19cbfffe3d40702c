//go:build goexperiment.simd && amd64

package engine

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/tinkershell/tinker/lib/models"
)

// withAttnAVX2 runs fn with the AVX2 attention tiles on or off; on, the
// 512-bit kernels are off, as on a CPU without AVX-512.
func withAttnAVX2(on bool, fn func()) {
	defer func(a, z bool) { attnAVX2, avx512 = a, z }(attnAVX2, avx512)
	attnAVX2 = on
	if on {
		avx512 = false
	}
	fn()
}

// TestAttentionAVX2TilesMatchScalar: the AVX2 register tiles give the
// scalar kernels' bits. attnDotsY against attnDot for 1-7 queries (every
// remainder of the groups of three), keys in place or four rows apart;
// attnTileY against weightedScalar's ascending sums for 1-6 rows, A read
// by rows and by columns.
func TestAttentionAVX2TilesMatchScalar(t *testing.T) {
	if !simdOK {
		t.Skip("no AVX2 and FMA on this CPU")
	}
	for _, hd := range []int{8, 64, 136} {
		for nq := 1; nq <= 7; nq++ {
			for _, stride := range []int{hd, 300} {
				checkDotsY(t, hd, nq, stride)
			}
		}
	}
	for rows := 1; rows <= len(attnTileY); rows++ {
		for _, k := range []int{1, 5, 64} {
			for _, ldp := range []int{1, 9} {
				checkTileY(t, rows, k, ldp)
			}
		}
	}
}

func checkDotsY(t *testing.T, hd, nq, stride int) {
	t.Helper()
	const nk = 4 * 5
	keys := randRows(1, nk*stride+hd, uint64(hd))[0]
	qs := randRows(1, nq*hd, uint64(nq))[0]
	ld := nk + 5
	sc := make([]float32, nq*ld)
	for t0 := 0; t0 < nk; t0 += 4 {
		scoreTileY(&sc[t0], ld, &qs[0], &keys[t0*stride+3], stride, hd, nq)
	}
	for j := range nq {
		for k := range nk {
			want := attnDot(keys[k*stride+3:][:hd], qs[j*hd:(j+1)*hd])
			if got := sc[j*ld+k]; math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("hd %d nq %d stride %d: score (%d,%d) = %g, attnDot %g", hd, nq, stride, j, k, got, want)
			}
		}
	}
}

func checkTileY(t *testing.T, rows, k, ldp int) {
	t.Helper()
	const n, lda, ldb, ldc = 48, 700, 53, 61
	a := randRows(1, rows*lda+k*ldp, uint64(rows))[0]
	b := randRows(1, k*ldb+n, uint64(k))[0]
	c := randRows(1, rows*ldc, 3)[0]
	want := slices.Clone(c)
	for i := range rows {
		p := make([]float32, k)
		for q := range p {
			p[q] = a[i*lda+q*ldp]
		}
		weightedScalar(want[i*ldc:i*ldc+n], p, b, ldb, 0)
	}
	withAttnAVX2(true, func() {
		weightedTileT(unsafe.Pointer(&c[0]), ldc, unsafe.Pointer(&a[0]), lda, ldp, unsafe.Pointer(&b[0]), ldb, k, rows, n)
	})
	for i := range rows {
		for e := range ldc {
			if got, w := c[i*ldc+e], want[i*ldc+e]; math.Float32bits(got) != math.Float32bits(w) {
				t.Fatalf("rows %d k %d ldp %d: C[%d][%d] = %g, ascending sum %g", rows, k, ldp, i, e, got, w)
			}
		}
	}
}

// TestAttentionAVX2MatchesRows runs the forward and backward block tests
// with the AVX2 tiles forced on (and the 512-bit kernels off), so that an
// AVX-512 machine checks them too: the forward against attendRow's scalar
// bits, the backward against attentionBackwardRef.
func TestAttentionAVX2MatchesRows(t *testing.T) {
	if !simdOK {
		t.Skip("no AVX2 and FMA on this CPU")
	}
	withAttnAVX2(true, func() {
		for _, hd := range []int{8, 16, 20, 128} {
			for _, group := range []int{1, 3} {
				c := Config{Shape: models.Shape{Heads: group * 2, KVHeads: 2, HeadDim: hd}}
				checkAttentionBlocks(t, c)
				for _, n := range []int{17, 130} {
					checkAttentionBackward(t, c, n)
				}
			}
		}
	})
}

// BenchmarkAttentionAVX2 runs BenchmarkAttentionLong's cases with the
// AVX2 tiles on and off (attnAVX2) in alternation, in one process, and
// reports the tiles' median CPU time and the medians and ranges of the
// paired off/on ratios of CPU and wall time (above 1: the tiles win).
// ATTN_AVX2_SWITCH=rows (headPackRows) or exp (expSumAVX2) toggles that
// switch instead (softgrad: softmaxGradY), the tiles on; all toggles the tiles and expSumAVX2
// together (the whole AVX2 path against the archsimd loops before it).
func BenchmarkAttentionAVX2(b *testing.B) {
	if !simdOK {
		b.Skip("no AVX2 and FMA on this CPU")
	}
	toggle := withAttnAVX2
	if os.Getenv("ATTN_AVX2_SWITCH") == "all" { // the tiles and attnExpSum8 together: main's AVX2 path against this one
		toggle = func(on bool, fn func()) {
			defer func(old bool) { expSumAVX2 = old }(expSumAVX2)
			expSumAVX2 = on
			withAttnAVX2(on, fn)
		}
	}
	if sw := map[string]*bool{"rows": &headPackRows, "exp": &expSumAVX2, "softgrad": &softmaxGradY}[os.Getenv("ATTN_AVX2_SWITCH")]; sw != nil {
		toggle = func(on bool, fn func()) { // the tiles on, the switch on and off
			defer func(old bool) { *sw = old }(*sw)
			*sw = on
			withAttnAVX2(true, fn)
		}
	}
	if os.Getenv("ATTN_AVX2_SWITCH") == "backrows" { // backRows(n) positions a backward block against attnBackRows
		toggle = func(on bool, fn func()) {
			defer func(old bool) { backRowsScaled = old }(backRowsScaled)
			backRowsScaled = on
			withAttnAVX2(true, fn)
		}
	}
	c := Config{Shape: models.Shape{Heads: 16, KVHeads: 8, HeadDim: 128}}
	for _, n := range []int{512, 1024, 2048} {
		for _, part := range []string{"forward", "backward"} {
			b.Run(fmt.Sprintf("%s%d", part, n), func(b *testing.B) {
				run := attnLongRun(c, part, n)
				var cpu, wall [2][]float64
				for b.Loop() {
					order := []int{0, 1}    // 0 on, 1 off
					if len(cpu[0])%2 == 1 { // every other pair off first: the first of a pair reads a few percent faster
						order = []int{1, 0}
					}
					for _, i := range order {
						toggle(i == 0, func() {
							c0, t0 := processCPU(), time.Now()
							run()
							cpu[i] = append(cpu[i], processCPU()-c0)
							wall[i] = append(wall[i], time.Since(t0).Seconds())
						})
					}
				}
				ratios := func(x [2][]float64) []float64 {
					r := make([]float64, len(x[0]))
					for i := range r {
						r[i] = x[1][i] / x[0][i]
					}
					slices.Sort(r)
					return r
				}
				rc, rw := ratios(cpu), ratios(wall)
				slices.Sort(cpu[0])
				b.ReportMetric(cpu[0][len(cpu[0])/2]*1e3, "cpu-ms-avx2")
				b.ReportMetric(rc[len(rc)/2], "x-cpu")
				b.ReportMetric(rc[0], "x-cpu-min")
				b.ReportMetric(rc[len(rc)-1], "x-cpu-max")
				b.ReportMetric(rw[len(rw)/2], "x-wall")
				b.ReportMetric(rw[0], "x-wall-min")
				b.ReportMetric(rw[len(rw)-1], "x-wall-max")
			})
		}
	}
}

// BenchmarkAttnTilesAVX2 times the AVX2 register tiles alone, operands in
// L1, on Qwen3-0.6B's head (dim 128), in GFLOP per CPU-second beside the
// one-core 256-bit FMA loop run between the batches (x-fma). Run with
// -cpu 1.
func BenchmarkAttnTilesAVX2(b *testing.B) {
	if !simdOK {
		b.Skip("no AVX2 and FMA on this CPU")
	}
	const hd = 128
	for _, k := range []int{64, 256} {
		a, bm, c := randRows(1, 6*k, 1)[0], randRows(1, k*hd, 2)[0], make([]float32, 6*hd)
		b.Run("weighted6/k="+fmt.Sprint(k), func(b *testing.B) {
			withAttnAVX2(true, func() {
				tileRate8(b, 2*6*hd*float64(k), func() {
					weightedTile(unsafe.Pointer(&c[0]), hd, unsafe.Pointer(&a[0]), k, unsafe.Pointer(&bm[0]), hd, k, 6, hd)
				})
			})
		})
	}
	const nk, nq = 64, 30 // keys: 16 tiles of four; ten groups of three queries
	keys, qs := randRows(1, nk*hd, 4)[0], randRows(1, nq*hd, 5)[0]
	sc := make([]float32, nq*nk)
	b.Run("dotsY3", func(b *testing.B) {
		tileRate8(b, 2*nq*nk*hd, func() {
			for t := 0; t < nk; t += 4 {
				scoreTileY(&sc[t], nk, &qs[0], &keys[t*hd], hd, hd, nq)
			}
		})
	})
}

// tileRate8 is tileRate against the 256-bit FMA loop (fmaChains).
func tileRate8(b *testing.B, flop float64, fn func()) {
	const batch = 2000
	var cpu, peak float64
	sink := make([]float32, 8)
	for b.Loop() {
		c0 := processCPU()
		for range batch {
			fn()
		}
		c1 := processCPU()
		fmaChains(4_000_000, sink)
		c2 := processCPU()
		cpu += c1 - c0
		peak += float64(10*8*2) * 4_000_000 / (c2 - c1)
	}
	rate := flop * batch * float64(b.N) / cpu / 1e9
	b.ReportMetric(rate, "GFLOP/cpu-s")
	b.ReportMetric(rate/(peak/float64(b.N)/1e9), "x-fma")
}

// TestExpSum8KernelMatchesScalar is TestExpSumKernelMatchesScalar for
// attnExpSum8 (expScores32's AVX2 path): lengths 0..70 (whole 16-score
// passes and the masked eight-lane tails), with p and without, exp32's
// limits, ±Inf and NaN, nothing written past the row.
func TestExpSum8KernelMatchesScalar(t *testing.T) {
	if !simdOK {
		t.Skip("no AVX2 and FMA on this CPU")
	}
	checkExpSumKernel(t, expScores8)
}

// BenchmarkTrainStepAVX2Attn alternates training steps of
// BenchmarkTrainStep's qwen3-wide4 shapes (2×512, 1×2048) with the whole
// AVX2 attention path on and off in one process (ATTN_AVX2_SWITCH=all's
// switches) and reports the paired off/on ratios of wall and CPU time: on
// a machine shared with other jobs, separate binaries' step times differ
// by the load of the moment more than by the change. ATTN_STEP_SWITCH=softgrad
// toggles softmaxGradY alone, the AVX2 path on; =backrows backRowsScaled.
func BenchmarkTrainStepAVX2Attn(b *testing.B) {
	if !simdOK {
		b.Skip("no AVX2 and FMA on this CPU")
	}
	for _, tc := range []struct {
		name    string
		seqs, n int
	}{{"qwen3-wide4-2x512", 2, 512}, {"qwen3-wide4-1x2048", 1, 2048}} {
		b.Run(tc.name, func(b *testing.B) {
			m := benchStepModel(b, tc.name, 4)
			tr := mustTrainer(b, m, LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
			loss, _ := NewLoss(LossCrossEntropy, nil)
			data := forLoss(testData(min(m.cfg.VocabSize, 256), 3, slices.Repeat([]int{tc.n}, tc.seqs)...), LossCrossEntropy)
			step := func() {
				if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
					b.Fatal(err)
				}
				if _, err := tr.OptimStep(DefaultAdamParams()); err != nil {
					b.Fatal(err)
				}
			}
			step() // sizes the scratch arena
			var rc, rw []float64
			for b.Loop() {
				var cpu, wall [2]float64
				order := []bool{true, false}
				if len(rc)%2 == 1 { // every other pair off first: the first step of a pair may pay for the other's garbage
					order = []bool{false, true}
				}
				for _, on := range order {
					i := map[bool]int{true: 0, false: 1}[on]
					func() {
						defer func(old, y, br bool) { expSumAVX2, softmaxGradY, backRowsScaled = old, y, br }(expSumAVX2, softmaxGradY, backRowsScaled)
						switch os.Getenv("ATTN_STEP_SWITCH") {
						case "softgrad": // softmaxGradY alone, the AVX2 path on
							softmaxGradY, on = on, true
						case "backrows": // backRowsScaled alone
							backRowsScaled, on = on, true
						}
						expSumAVX2 = on
						withAttnAVX2(on, func() {
							c0, t0 := processCPU(), time.Now()
							step()
							cpu[i], wall[i] = processCPU()-c0, time.Since(t0).Seconds()
						})
					}()
				}
				rc, rw = append(rc, cpu[1]/cpu[0]), append(rw, wall[1]/wall[0])
				b.Logf("on %.1f s %.1f cpu-s, off %.1f s %.1f cpu-s", wall[0], cpu[0], wall[1], cpu[1])
			}
			slices.Sort(rc)
			slices.Sort(rw)
			b.ReportMetric(rc[len(rc)/2], "x-cpu")
			b.ReportMetric(rw[len(rw)/2], "x-wall")
		})
	}
}
