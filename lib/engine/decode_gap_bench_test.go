package engine

import (
	"testing"
	"time"
)

// BenchmarkDecodeGap splits a bfloat16 decoding token's wall time (the
// Qwen3-0.6B shape, one sequence, positions 1-32 as BenchmarkDecode)
// into the matrix products and everything between them. Token by token,
// so that load and the host's bandwidth phases fall on adjacent readings
// alike, it times:
//
//   - fwd: one forward step (Model.forward: norms, rope, attention over
//     the cache, the products, the logits);
//   - mats: the same products alone, the same forks in the same order
//     (q/k/v and gate/up grouped, o, down, lm_head), on fixed vectors;
//   - onefork: every product of the token in a single fork (no barrier
//     between them: not a valid decode, the bound on what removing the
//     forks' hand-offs and tails could win), its pieces cut for the
//     whole token (a few large ones first);
//   - samepieces: the same single fork on the pieces the forks cut, so
//     that only the barriers differ from mats;
//   - probe: the token's bytes read once (poolRead) by the variant that
//     read them fastest in a full probe (variantReads) before the tokens.
//
// It reports the medians of the per-token ratios: %mats-of-fwd (the share
// of a token in the products), %onefork-of-mats, %samepieces-of-mats and
// %probe-of-mats (the
// products' share of the read limit).
func BenchmarkDecodeGap(b *testing.B) {
	d := newDecodeBench(b)
	c, m, bytes := d.c, d.m, d.bytes
	const tokens = 32
	ws := &workspace{}
	var seq *kvCache
	fwd := func(pos int) time.Duration {
		if pos == 0 {
			seq = m.newCache(tokens + 1)
		}
		t0 := time.Now()
		m.forward(ws, []row{{seq: seq, token: (pos * 7919) % c.VocabSize, pos: pos, logits: true}})
		return time.Since(t0)
	}
	xh, xq, xi := d.xh, d.xq, d.xi
	q, k, v, o, g, u, dn, lg := d.q, d.k, d.v, d.o, d.g, d.u, d.dn, d.lg
	mats := func() time.Duration {
		t0 := time.Now()
		d.mats()
		return time.Since(t0)
	}
	var all []mat
	var ins [][][]float32
	var outs [][][]float32
	for li := range m.w.layers {
		l := &m.w.layers[li]
		all = append(all, l.q, l.k, l.v, l.o, l.gate, l.up, l.down)
		ins = append(ins, xh, xh, xh, xq, xh, xh, xi)
		outs = append(outs, q, k, v, o, g, u, dn)
	}
	all, ins, outs = append(all, m.w.lmHead), append(ins, xh), append(outs, lg)
	// The whole token's pieces cut as one group, and as the forks cut
	// them (each fork's decodePieces in turn): the second keeps every
	// piece start and tail size of mats and drops only the barriers.
	whole := decodePieces(all, 16, 2)
	var same []rowPiece
	for li := 0; li < len(m.w.layers); li++ {
		for _, grp := range [][2]int{{0, 3}, {3, 4}, {4, 6}, {6, 7}} {
			for _, p := range decodePieces(all[7*li+grp[0]:7*li+grp[1]], 16, 2) {
				same = append(same, rowPiece{7*li + grp[0] + p.w, p.lo, p.hi})
			}
		}
	}
	for _, p := range decodePieces(all[len(all)-1:], 16, 2) {
		same = append(same, rowPiece{len(all) - 1, p.lo, p.hi})
	}
	oneforkOf := func(pieces []rowPiece) func() time.Duration {
		return func() time.Duration {
			t0 := time.Now()
			forkJoin(len(pieces), func(i int) {
				p := pieces[i]
				matRows(all[p.w], ins[p.w], outs[p.w], p.lo, p.hi, false)
			})
			return time.Since(t0)
		}
	}
	onefork, samePieces := oneforkOf(whole), oneforkOf(same)
	// coarse is mats with its forks cut into fewer, larger pieces: a
	// third of the weights left rather than an eighth, at least 4 times
	// decodeMinPiece.
	fork := func(ms []mat, xs [][]float32, yss [][][]float32) {
		ps := cutPieces(nil, ms, 16, 3, 4*decodeMinPiece)
		forkJoin(len(ps), func(i int) {
			p := ps[i]
			matRows(ms[p.w], xs, yss[p.w], p.lo, p.hi, false)
		})
	}
	coarse := func() time.Duration {
		t0 := time.Now()
		for li := range m.w.layers {
			l := &m.w.layers[li]
			fork([]mat{l.q, l.k, l.v}, xh, [][][]float32{q, k, v})
			fork([]mat{l.o}, xq, [][][]float32{o})
			fork([]mat{l.gate, l.up}, xh, [][][]float32{g, u})
			fork([]mat{l.down}, xi, [][][]float32{dn})
		}
		fork([]mat{m.w.lmHead}, xh, [][][]float32{lg})
		return time.Since(t0)
	}
	var matsFwd, oneMats, sameMats, coarseMats, probeMats []float64
	ps, bufs := readProbes(), decodeMatrixWords(m)
	for b.Loop() {
		bws := variantReads(ps, bufs)
		top := fastestVariants(ps, bws, 1)[0]
		for pos := range tokens + 1 {
			f := fwd(pos)
			if pos == 0 {
				continue // a prefill's
			}
			// In turn, each first on every fourth token.
			var ts [4]time.Duration
			runs := [4]func() time.Duration{mats, onefork, samePieces, coarse}
			for r := range 4 {
				i := (r + pos) % 4
				ts[i] = runs[i]()
			}
			mt, one, sm, co := ts[0], ts[1], ts[2], ts[3]
			coarseMats = append(coarseMats, 100*co.Seconds()/mt.Seconds())
			probe := bytes / poolRead(top.read, bufs)
			matsFwd = append(matsFwd, 100*mt.Seconds()/f.Seconds())
			oneMats = append(oneMats, 100*one.Seconds()/mt.Seconds())
			sameMats = append(sameMats, 100*sm.Seconds()/mt.Seconds())
			probeMats = append(probeMats, 100*probe/mt.Seconds())
		}
	}
	b.ReportMetric(median(matsFwd), "%mats-of-fwd")
	b.ReportMetric(median(oneMats), "%onefork-of-mats")
	b.ReportMetric(median(sameMats), "%samepieces-of-mats")
	b.ReportMetric(median(coarseMats), "%coarse-of-mats")
	b.ReportMetric(median(probeMats), "%probe-of-mats")
}

// decodeBench is what the decode benchmarks share: the Qwen3-0.6B shape
// with bfloat16 matrices, and fixed vectors in and out of every product a
// decoding token runs.
type decodeBench struct {
	c     Config
	m     *Model
	bytes float64 // what a token's products read
	// The products' inputs (hidden, attention output, intermediate) and
	// outputs.
	xh, xq, xi               [][]float32
	q, k, v, o, g, u, dn, lg [][]float32
}

func newDecodeBench(b *testing.B) *decodeBench {
	m := qwen3SmallBF16(b, "qwen3-0.6b-shape")
	c := qwen3Small()
	vec := func(n int) [][]float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%7-3) / 8
		}
		return [][]float32{x}
	}
	h, qd, kvd, in := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim, c.Intermediate
	return &decodeBench{c: c, m: m, bytes: matrixParams(c) * 2,
		xh: vec(h), xq: vec(qd), xi: vec(in),
		q: vec(qd), k: vec(kvd), v: vec(kvd), o: vec(h), g: vec(in), u: vec(in), dn: vec(h), lg: vec(c.VocabSize)}
}

// mats runs a token's products as decode does: the same forks (q/k/v and
// gate/up grouped, o, down, lm_head) in the same order, on the fixed
// vectors.
func (d *decodeBench) mats() {
	for li := range d.m.w.layers {
		l := &d.m.w.layers[li]
		matMulGroup([]mat{l.q, l.k, l.v}, d.xh, [][][]float32{d.q, d.k, d.v})
		matMul(l.o, d.xq, d.o, false)
		matMulGroup([]mat{l.gate, l.up}, d.xh, [][][]float32{d.g, d.u})
		matMul(l.down, d.xi, d.dn, false)
	}
	matMul(d.m.w.lmHead, d.xh, d.lg, false)
}
