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
//     forks' hand-offs and tails could win);
//   - probe: the token's bytes read once (poolRead) by the variant that
//     read them fastest in a full probe (variantReads) before the tokens.
//
// It reports the medians of the per-token ratios: %mats-of-fwd (the share
// of a token in the products), %onefork-of-mats and %probe-of-mats (the
// products' share of the read limit).
func BenchmarkDecodeGap(b *testing.B) {
	c := qwen3Small()
	ts := randomTensors(c, 1)
	matricesToBF16(ts)
	m, err := New("qwen3-0.6b-shape", c, ts)
	if err != nil {
		b.Fatal(err)
	}
	bytes := matrixParams(c) * 2
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
	h, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	vec := func(n int) [][]float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%7-3) / 8
		}
		return [][]float32{x}
	}
	xh, xq, xi := vec(h), vec(qd), vec(c.Intermediate)
	q, k, v, o, g, u, dn, lg := vec(qd), vec(kvd), vec(kvd), vec(h), vec(c.Intermediate), vec(c.Intermediate), vec(h), vec(c.VocabSize)
	mats := func() time.Duration {
		t0 := time.Now()
		for li := range m.w.layers {
			l := &m.w.layers[li]
			matMulGroup([]mat{l.q, l.k, l.v}, xh, [][][]float32{q, k, v})
			matMul(l.o, xq, o, false)
			matMulGroup([]mat{l.gate, l.up}, xh, [][][]float32{g, u})
			matMul(l.down, xi, dn, false)
		}
		matMul(m.w.lmHead, xh, lg, false)
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
	pieces := decodePieces(all, 16, 2)
	onefork := func() time.Duration {
		t0 := time.Now()
		forkJoin(len(pieces), func(i int) {
			p := pieces[i]
			matRows(all[p.w], ins[p.w], outs[p.w], p.lo, p.hi, false)
		})
		return time.Since(t0)
	}
	var matsFwd, oneMats, probeMats []float64
	ps, bufs := readProbes(), decodeMatrixWords(m)
	for b.Loop() {
		bws := variantReads(ps, bufs)
		top := fastestVariants(ps, bws, 1)[0]
		for pos := range tokens + 1 {
			f := fwd(pos)
			if pos == 0 {
				continue // a prefill's
			}
			mt, one := mats(), onefork()
			probe := bytes / poolRead(top.read, bufs)
			matsFwd = append(matsFwd, 100*mt.Seconds()/f.Seconds())
			oneMats = append(oneMats, 100*one.Seconds()/mt.Seconds())
			probeMats = append(probeMats, 100*probe/mt.Seconds())
		}
	}
	b.ReportMetric(median(matsFwd), "%mats-of-fwd")
	b.ReportMetric(median(oneMats), "%onefork-of-mats")
	b.ReportMetric(median(probeMats), "%probe-of-mats")
}
