package engine

import (
	"math"
	"runtime"
	"slices"
	"testing"
)

// TestAdamStepIndependentOfThreads splits parameters large enough for
// several cores and requires the bits of one core: the same weights and
// moments, the same gradient norm, and each element as adamUpdate gives
// it alone; the gradients end cleared.
func TestAdamStepIndependentOfThreads(t *testing.T) {
	a := adamConsts{coef: 0.7, b1: 0.9, b2: 0.95, decay: 0.999, stepSize: 1e-3, bc2: 0.3, eps: 1e-8}
	make1 := func() []*param {
		var ps []*param
		for i, n := range []int{100003, 17, 40000} {
			q := &param{w: spreadF(n, 1, uint64(3*i)), m: spreadF(n, 0.1, uint64(3*i+1)), grad: spreadF(n, 2, uint64(3*i+2))}
			q.v = make([]float32, n)
			for j, g := range q.grad {
				q.v[j] = g * g / 4
			}
			ps = append(ps, q)
		}
		return ps
	}
	run := func(procs int) ([]*param, float64) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		ps := make1()
		ss := gradSquares(ps)
		adamStep(ps, a)
		return ps, ss
	}
	one, ss1 := run(1)
	two, ss2 := run(2)
	if math.Float64bits(ss1) != math.Float64bits(ss2) {
		t.Errorf("gradient norm² %v on one core, %v on two", ss1, ss2)
	}
	ref := make1()
	for i, q := range two {
		r := ref[i]
		adamUpdate(r.w, r.m, r.v, r.grad, a)
		for _, pair := range [][2][]float32{{q.w, one[i].w}, {q.m, one[i].m}, {q.v, one[i].v}, {q.w, r.w}, {q.m, r.m}, {q.v, r.v}} {
			if !slices.Equal(pair[0], pair[1]) {
				t.Fatalf("parameter %d: two cores differ from one core or from adamUpdate", i)
			}
		}
		if slices.ContainsFunc(q.grad, func(g float32) bool { return g != 0 }) {
			t.Errorf("parameter %d: gradient not cleared", i)
		}
	}
}

// spreadF returns n seeded float32s in ±scale.
func spreadF(n int, scale float32, seed uint64) []float32 {
	r := newRNG(seed)
	x := make([]float32, n)
	for i := range x {
		x[i] = (2*r.uniform32() - 1) * scale
	}
	return x
}
