//go:build goexperiment.simd && amd64

package engine

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

var amxOneRowCfg = func() (c [64]byte) {
	c = amxTileCfg
	for t := range 6 {
		c[48+t] = 1
	}
	return c
}()

// amxOneToken runs rows [lo, hi) (whole chunks of 16 blocks) of w for
// the one packed vector xb with cfg.
func amxOneToken(cfg *[64]byte, w mat, xb []uint16, lo, hi int, out *[32 * 16 * 16]float32, dst []float32) {
	kp := bf16Cols(w.cols)
	ws := 16 * kp
	for b := lo / 16; b*16 < hi; b += 16 {
		nb := min(16, hi/16-b)
		amxBF16T1N2(cfg, &xb[0], 2*bf16Pitch(w.cols), &w.vn[b*ws], 2*ws, kp/32, nb/2, &out[0], 4*16*nb)
		copy(dst[b*16:], out[:16*nb])
	}
}

func TestAMXOneRowExpSameBits(t *testing.T) {
	needAMX(t)
	rng := rand.New(rand.NewPCG(4, 4))
	for _, cols := range []int{1024, 3072, 64} {
		w := randBF16Mat(rng, 512, cols)
		x := randVecs(rng, 1, cols)
		var pp []uint16
		xb := packBF16Rows(x, cols, &pp)
		a, b := make([]float32, 512), make([]float32, 512)
		var out [32 * 16 * 16]float32
		amxOneToken(&amxTileCfg, w, xb, 0, 512, &out, a)
		amxOneToken(&amxOneRowCfg, w, xb, 0, 512, &out, b)
		if !slices.Equal(a, b) {
			t.Fatalf("cols %d differ", cols)
		}
	}
}

func BenchmarkAMXOneRowExp(b *testing.B) {
	if !amxReady() {
		b.Skip("no AMX")
	}
	rng := rand.New(rand.NewPCG(2, 2))
	ws := make([]mat, 112)
	for i := range ws {
		rows, cols := 3072, 1024
		if i%2 == 1 {
			rows, cols = 1024, 3072
		}
		ws[i] = randBF16Mat(rng, rows, cols)
		ws[i].bf = nil
	}
	x := randVecs(rng, 1, 3072)
	var p1, p3 []uint16
	xb1, xb3 := packBF16Rows([][]float32{x[0][:1024]}, 1024, &p1), packBF16Rows(x, 3072, &p3)
	dst := make([]float32, 3072)
	run := func(cfg *[64]byte, part, parts int) {
		var out [32 * 16 * 16]float32
		for _, w := range ws {
			xb := xb1
			if w.cols == 3072 {
				xb = xb3
			}
			amxOneToken(cfg, w, xb, w.rows*part/parts, w.rows*(part+1)/parts, &out, dst)
		}
	}
	one := func(cfg *[64]byte) func() { return func() { run(cfg, 0, 1) } }
	two := func(cfg *[64]byte) func() {
		return func() {
			var wg sync.WaitGroup
			for p := range 2 {
				wg.Go(func() { run(cfg, p, 2) })
			}
			wg.Wait()
		}
	}
	for b.Loop() {
		runtime.LockOSThread()
		a1, r1 := pairedRatio(7, one(&amxTileCfg), one(&amxTileCfg)), pairedRatio(11, one(&amxTileCfg), one(&amxOneRowCfg))
		runtime.UnlockOSThread()
		a2, r2, w2 := pairedRatioBy(processCPU, 7, two(&amxTileCfg), two(&amxTileCfg)), pairedRatioBy(processCPU, 11, two(&amxTileCfg), two(&amxOneRowCfg)), pairedRatioBy(wallClock, 11, two(&amxTileCfg), two(&amxOneRowCfg))
		b.Logf("1t cpu AA %.3f 1row %.3f | 2t cpu AA %.3f 1row %.3f wall 1row %.3f", a1, r1, a2, r2, w2)
	}
}
