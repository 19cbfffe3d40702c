//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// windowModel is a weightless model whose layer 0 attends through a
// sliding window of w positions (0: all) and, when sink, per-head sink
// logits.
func windowModel(c Config, w int, sink bool) *Model {
	if w > 0 {
		c.LayerTypes, c.SlidingWindow = []string{"sliding_attention"}, w
	}
	m := &Model{cfg: c, w: &weights{layers: make([]layerWeights, 1)}}
	if sink {
		m.w.layers[0].sinks = randRows(1, c.Heads, 77)[0]
	}
	return m
}

// TestAttentionWindowBlocksMatchRows: GPT-OSS's sliding-window and sink
// layers on the blocked forward give the bits of the per-row scalar path
// (attendRow), with windows shorter than a block, between one and two
// blocks, and longer than every sequence.
func TestAttentionWindowBlocksMatchRows(t *testing.T) {
	for _, w := range qemuFew([]int{0, 3, attnRows + 5, 1000}, []int{0, 3, attnRows + 5}) {
		for _, sink := range []bool{false, true} {
			if w == 0 && !sink {
				continue // TestAttentionBlocksMatchRows
			}
			for _, hd := range []int{12, 64} {
				for _, group := range qemuFew([]int{1, 2, 3}, []int{1, 3}) {
					c := Config{Shape: models.Shape{Heads: group * 2, KVHeads: 2, HeadDim: hd}}
					t.Run(fmt.Sprintf("w%d-sink%v-hd%d-g%d", w, sink, hd, group), func(t *testing.T) {
						_, rows, ws := attnBlockStep(c)
						checkAttentionRowsBits(t, windowModel(c, w, sink), rows, ws)
					})
				}
			}
		}
	}
}

// TestAttentionWindowBackward checks the blocked backward of windowed and
// sink layers against a float64 reference, and that its bits do not depend
// on the thread count or the vector kernels.
func TestAttentionWindowBackward(t *testing.T) {
	for _, w := range []int{0, 3, attnRows + 5} {
		for _, sink := range []bool{false, true} {
			for _, group := range []int{1, 2} {
				c := Config{Shape: models.Shape{Heads: group * 2, KVHeads: 2, HeadDim: 16}}
				m := windowModel(c, w, sink)
				for _, n := range []int{1, 17, 50} {
					checkWindowBackward(t, m, n)
				}
			}
		}
	}
}

func checkWindowBackward(t *testing.T, m *Model, n int) {
	t.Helper()
	c := m.cfg
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	q, k, v, datt := randRows(n, qd, 1), randRows(n, kvd, 2), randRows(n, kvd, 3), randRows(n, qd, 4)
	want := windowBackward64(m, q, k, v, datt)
	var first [3][]float32
	for _, procs := range []int{1, 3} {
		for _, vec := range []bool{false, true} {
			got := [3][][]float32{randRows(n, qd, 5), randRows(n, kvd, 6), randRows(n, kvd, 7)}
			init := [3][]float32{flat(got[0]), flat(got[1]), flat(got[2])}
			prev := runtime.GOMAXPROCS(procs)
			withSIMD(vec, func() { attentionBackward(c, 0, m.sinks(0), q, flat(k), flat(v), datt, got[0], got[1], got[2]) })
			runtime.GOMAXPROCS(prev)
			for i, name := range []string{"dq", "dk", "dv"} {
				g := flat(got[i])
				if first[i] == nil {
					first[i] = g
				} else if !bitsEqual(g, first[i]) {
					t.Fatalf("%s n=%d GOMAXPROCS=%d simd=%v: %s bits differ from the first run at %s", c.LayerTypes, n, procs, vec, name, firstDiff(g, first[i]))
				}
				for e := range g {
					d := float64(g[e] - init[i][e])
					if math.Abs(d-want[i][e]) > 1e-5+1e-4*math.Abs(want[i][e]) {
						t.Fatalf("window %d sinks %v n=%d: %s[%d] = %g, float64 reference %g", c.SlidingWindow, m.sinks(0) != nil, n, name, e, d, want[i][e])
					}
				}
			}
		}
	}
}

// windowBackward64 is the attention backward of layer 0 of m in float64,
// written from the definition: p = softmax over the window's scaled
// scores with the sink's exp in the denominator, out = Σ p·v;
// ds = p·(dp − Σ p·dp).
func windowBackward64(m *Model, q, k, v, datt [][]float32) [3][]float64 {
	c := m.cfg
	n, hd, group := len(q), c.HeadDim, c.Heads/c.KVHeads
	qd, kvd := c.Heads*hd, c.KVHeads*hd
	g := [3][]float64{make([]float64, n*qd), make([]float64, n*kvd), make([]float64, n*kvd)}
	dot := func(a, b []float32) (s float64) {
		for i := range a {
			s += float64(a[i]) * float64(b[i])
		}
		return s
	}
	for p := range n {
		lo := c.firstKey(0, p)
		for h := range c.Heads {
			ko := h / group * hd
			qh, do := q[p][h*hd:(h+1)*hd], datt[p][h*hd:(h+1)*hd]
			e, dp := make([]float64, p+1), make([]float64, p+1)
			den := 0.0
			if s := m.sinks(0); s != nil {
				den = math.Exp(float64(s[h]))
			}
			for t := lo; t <= p; t++ {
				e[t] = math.Exp(dot(qh, k[t][ko:ko+hd]) / math.Sqrt(float64(hd)))
				dp[t] = dot(do, v[t][ko:ko+hd])
				den += e[t]
			}
			var dsum float64
			for t := lo; t <= p; t++ {
				dsum += e[t] / den * dp[t]
			}
			for t := lo; t <= p; t++ {
				pt := e[t] / den
				ds := pt * (dp[t] - dsum) / math.Sqrt(float64(hd))
				for i := range hd {
					g[0][p*qd+h*hd+i] += ds * float64(k[t][ko+i])
					g[1][t*kvd+ko+i] += ds * float64(qh[i])
					g[2][t*kvd+ko+i] += pt * float64(do[i])
				}
			}
		}
	}
	return g
}
