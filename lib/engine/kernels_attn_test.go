//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// attnShapes are head dims around the vector width (and not multiples of
// it), KV head counts and position counts around the four-row block
// (every remainder of four: the vector kernels take the last group of one
// to three rows too).
var (
	attnHeadDims  = []int{4, 8, 12, 16, 20, 32, 40, 64, 72, 128}
	attnKVHeads   = []int{1, 2, 3}
	attnPositions = []int{1, 2, 3, 4, 5, 6, 7, 8, 13, 33}
)

// TestAttnKernelsMatchPerPosition checks the attention kernels, vector and
// scalar, against the per-position attnDot/axpyFMA calls they replace (scalar),
// bit for bit, reading each KV head of a flat cache.
func TestAttnKernelsMatchPerPosition(t *testing.T) {
	for _, hd := range attnHeadDims {
		for _, kvh := range attnKVHeads {
			for _, np := range attnPositions {
				kvd := kvh * hd
				cache := randRows(1, (np+1)*kvd, uint64(hd*np+kvh))[0]
				in := randRows(3, max(np, hd), uint64(7*hd+np))
				for h := range kvh {
					checkAttnKernels(t, fmt.Sprintf("hd=%d kv=%d/%d np=%d", hd, h, kvh, np), cache, kvd, h*hd, hd, np, in)
				}
			}
		}
	}
}

func checkAttnKernels(t *testing.T, name string, cache []float32, kvd, off, hd, np int, in [][]float32) {
	t.Helper()
	q, p, init := in[0][:hd], in[1][:np], in[2][:hd]
	run := func(perPos bool) (dots, w []float32) {
		dots, w = make([]float32, 3*np), slices.Clone(init)
		if !perPos {
			attnDots(dots[:np], q, cache, kvd, off)
			attnDotsPair(dots[np:2*np], dots[2*np:], init, q, cache, kvd, off)
			attnWeighted(w, p, cache, kvd, off)
			return dots, w
		}
		for j := range np {
			o := j*kvd + off
			dots[j] = attnDot(cache[o:o+hd], q)
			dots[np+j], dots[2*np+j] = attnDot(cache[o:o+hd], init), dots[j]
			axpyFMA(w, p[j], cache[o:o+hd])
		}
		return dots, w
	}
	var rd, rw []float32
	withSIMD(false, func() { rd, rw = run(true) })
	for _, vec := range []bool{false, true} {
		withSIMD(vec, func() {
			d, w := run(false)
			if !bitsEqual(d, rd) || !bitsEqual(w, rw) {
				t.Fatalf("%s simd=%v: attention kernels differ from the per-position attnDot/axpyFMA", name, vec)
			}
		})
	}
}

// TestAttentionSIMDMatchesScalar runs the forward attention of a batch of
// rows and attentionBackward with the vector kernels on and off under
// GOMAXPROCS 1 and 3 (GQA groups, head dims off the vector width) and
// requires identical bits.
func TestAttentionSIMDMatchesScalar(t *testing.T) {
	for _, sh := range [][3]int{{4, 2, 16}, {6, 2, 12}, {3, 3, 32}, {8, 1, 20}, {2, 1, 64}} {
		c := Config{Shape: models.Shape{Heads: sh[0], KVHeads: sh[1], HeadDim: sh[2]}}
		const n = 11
		var ref [2][]float32
		for _, procs := range []int{1, 3} {
			for _, vec := range []bool{false, true} {
				prev := runtime.GOMAXPROCS(procs)
				var got [2][]float32
				withSIMD(vec, func() { got = attentionBoth(c, n) })
				runtime.GOMAXPROCS(prev)
				if ref[0] == nil {
					ref = got
					continue
				}
				if !bitsEqual(got[0], ref[0]) || !bitsEqual(got[1], ref[1]) {
					t.Fatalf("%v GOMAXPROCS=%d simd=%v: attention differs from the scalar run", sh, procs, vec)
				}
			}
		}
	}
}

// attentionBoth returns the forward attention outputs of n rows at
// positions 0..n-1 and the gradients of q, k and v, flattened.
func attentionBoth(c Config, n int) [2][]float32 {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	q, k, v, datt := randRows(n, qd, 1), flat(randRows(n, kvd, 2)), flat(randRows(n, kvd, 3)), randRows(n, qd, 4)
	m := &Model{cfg: c}
	ws := &workspace{q: q, att: rowsOf(make([]float32, n*qd), n, qd)}
	seq := &kvCache{k: [][]float32{k}, v: [][]float32{v}}
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{seq: seq, pos: i}
	}
	m.attention(ws, rows, 0)
	dq, dk, dv := rowsOf(make([]float32, n*qd), n, qd), rowsOf(make([]float32, n*kvd), n, kvd), rowsOf(make([]float32, n*kvd), n, kvd)
	attentionBackward(c, 0, nil, q, k, v, datt, dq, dk, dv)
	return [2][]float32{flat(ws.att), slices.Concat(flat(dq), flat(dk), flat(dv))}
}
