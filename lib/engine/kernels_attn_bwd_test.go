//go:build goexperiment.simd && amd64

package engine

import (
	"math"
	"runtime"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestAttentionBackwardBlocksMatchRef runs the blocked attentionBackward
// with the vector kernels on and off under GOMAXPROCS 1 and 3 and requires
// the bits of the per-position reference for dq, dk and dv: head dims on
// and off the vector width, GQA groups 1, 2 and 4, lengths that end in
// partial blocks, and gradients that already hold values (they accumulate).
func TestAttentionBackwardBlocksMatchRef(t *testing.T) {
	lengths := []int{1, 2, 15, 17, 33, 130}
	if emulated() {
		// 33 already spans blocks and ends in a partial one; 130 was
		// four fifths of this test's time under qemu.
		lengths = lengths[:5]
	}
	for _, hd := range []int{8, 12, 16, 128} {
		for _, group := range qemuFew([]int{1, 2, 4}, []int{1, 4}) {
			for _, kvh := range qemuFew([]int{1, 2}, []int{2}) {
				c := Config{Shape: models.Shape{Heads: group * kvh, KVHeads: kvh, HeadDim: hd}}
				for _, n := range lengths {
					checkAttentionBackward(t, c, n)
				}
			}
		}
	}
}

func checkAttentionBackward(t *testing.T, c Config, n int) {
	t.Helper()
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	q, k, v, datt := randRows(n, qd, 1), randRows(n, kvd, 2), randRows(n, kvd, 3), randRows(n, qd, 4)
	grads := func() [3][][]float32 {
		return [3][][]float32{randRows(n, qd, 5), randRows(n, kvd, 6), randRows(n, kvd, 7)}
	}
	ref := grads()
	withSIMD(false, func() {
		prev := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(prev)
		attentionBackwardRef(c, q, k, v, datt, ref[0], ref[1], ref[2])
	})
	defer func(old bool) { avx512 = old }(avx512)
	widths := []bool{avx512}
	if avx512 {
		widths = append(widths, false) // the 256-bit kernels too
	}
	for _, wide := range widths {
		avx512 = wide
		for _, procs := range []int{1, 3} {
			for _, vec := range []bool{false, true} {
				got := grads()
				prev := runtime.GOMAXPROCS(procs)
				withSIMD(vec, func() { attentionBackward(c, 0, nil, q, flat(k), flat(v), datt, got[0], got[1], got[2]) })
				runtime.GOMAXPROCS(prev)
				for i, name := range []string{"dq", "dk", "dv"} {
					if g, r := flat(got[i]), flat(ref[i]); !bitsEqual(g, r) {
						t.Fatalf("heads=%d kv=%d hd=%d n=%d GOMAXPROCS=%d simd=%v avx512=%v: %s differs from the per-position reference at element %s",
							c.Heads, c.KVHeads, c.HeadDim, n, procs, vec, wide, name, firstDiff(g, r))
					}
				}
			}
		}
	}
}

// attentionBackwardRef is the per-position attention backward that
// attentionBackward replaced, kept as the reference for its bits: for each
// query position and head it recomputes the scores and softmax and calls
// axpyFMA once per key for each of dq, dk and dv.
func attentionBackwardRef(c Config, q, k, v, datt, dq, dk, dv [][]float32) {
	n := len(q)
	hd, group := c.HeadDim, c.Heads/c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	workers := min(runtime.GOMAXPROCS(0), c.KVHeads, max(1, n*n*c.Heads*hd/parallelMinWork))
	forkJoin(workers, func(wk int) {
		p, s := make([]float64, n), make([]float32, n)
		dp := make([]float32, n)
		for kvh := wk; kvh < c.KVHeads; kvh += workers {
			ko := kvh * hd
			for tq := range n {
				for g := range group {
					qo := (kvh*group + g) * hd
					qv, do := q[tq][qo:qo+hd], datt[tq][qo:qo+hd]
					mx := float32(math.Inf(-1))
					for j := 0; j <= tq; j++ {
						s[j] = float32(attnDot(k[j][ko:ko+hd], qv) * scale) // the forward's scaled score
						mx = max(mx, s[j])
					}
					var lanes [8]float64
					for j := 0; j <= tq; j++ {
						p[j] = float64(exp32(s[j] - mx))
						lanes[j%8] += p[j]
					}
					r := 1 / sum8(&lanes)
					for j := 0; j <= tq; j++ {
						p[j] *= r
						dp[j] = attnDot(v[j][ko:ko+hd], do)
					}
					dsum := dot64Lanes(p[:tq+1], dp[:tq+1])
					dqv := dq[tq][qo : qo+hd]
					for j := 0; j <= tq; j++ {
						ds := float32(float64(p[j]*(float64(dp[j])-dsum)) * float64(scale))
						axpyFMA(dqv, ds, k[j][ko:ko+hd])
						axpyFMA(dk[j][ko:ko+hd], ds, qv)
						axpyFMA(dv[j][ko:ko+hd], float32(p[j]), do)
					}
				}
			}
		}
	})
}

// TestSoftmaxSumsSIMDMatchesScalar: the backward softmax's two sums give
// the same bits with the vector lanes on and off, and are the eight-lane
// sums and tree they are documented as (lengths around the lane count).
func TestSoftmaxSumsSIMDMatchesScalar(t *testing.T) {
	r := newRNG(5)
	for n := range 40 {
		p, dp := make([]float64, n), randRows(1, n+1, uint64(n))[0][:n]
		for i := range p {
			p[i] = float64(r.uniform32()) * math.Exp(float64(i%7)-3)
		}
		var lanes, dlanes [8]float64
		for i := range p {
			l := i % 8
			if i >= n&^7 {
				l = 0
			}
			lanes[l] += p[i]
			dlanes[l] += float64(p[i] * float64(dp[i]))
		}
		tree := func(s [8]float64) float64 { return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) }
		for _, vec := range []bool{false, true} {
			withSIMD(vec, func() {
				if got, want := sumLanes(p), tree(lanes); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("n=%d simd=%v: sumLanes %v, want %v", n, vec, got, want)
				}
				if got, want := dot64Lanes(p, dp), tree(dlanes); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("n=%d simd=%v: dot64Lanes %v, want %v", n, vec, got, want)
				}
			})
		}
	}
}

// TestBackRowsKeepBits runs attentionBackward with blocks of backRows(n)
// positions and of attnBackRows on sequences long enough for the two to
// differ (one and two KV heads, so the head split and blockSplit both
// run, on one core and two) and requires the same dq, dk and dv bits.
func TestBackRowsKeepBits(t *testing.T) {
	defer func(old bool) { backRowsScaled = old }(backRowsScaled)
	for _, n := range []int{2100} { // blocks of 128, the last of 52
		backRowsScaled = true
		if backRows(n) <= attnBackRows {
			t.Fatalf("backRows(%d) = %d: the test needs blocks longer than attnBackRows (%d)", n, backRows(n), attnBackRows)
		}
		for _, hd := range qemuFew([]int{16, 64}, []int{16}) {
			for _, kvh := range []int{1, 2} {
				c := Config{Shape: models.Shape{Heads: 2 * kvh, KVHeads: kvh, HeadDim: hd}}
				qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
				q, k, v, datt := randRows(n, qd, 1), randRows(n, kvd, 2), randRows(n, kvd, 3), randRows(n, qd, 4)
				for _, procs := range []int{1, 2} {
					var out [2][3][][]float32
					for i, scaled := range []bool{false, true} {
						backRowsScaled = scaled
						out[i] = [3][][]float32{randRows(n, qd, 5), randRows(n, kvd, 6), randRows(n, kvd, 7)}
						prev := runtime.GOMAXPROCS(procs)
						attentionBackward(c, 0, nil, q, flat(k), flat(v), datt, out[i][0], out[i][1], out[i][2])
						runtime.GOMAXPROCS(prev)
					}
					for i, name := range []string{"dq", "dk", "dv"} {
						if g, r := flat(out[1][i]), flat(out[0][i]); !bitsEqual(g, r) {
							t.Fatalf("n=%d hd=%d kv=%d GOMAXPROCS=%d: %s in blocks of %d differs from blocks of %d at element %s",
								n, hd, kvh, procs, name, backRows(n), attnBackRows, firstDiff(g, r))
						}
					}
				}
			}
		}
	}
}
