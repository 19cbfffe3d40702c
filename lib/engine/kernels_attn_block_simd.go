//go:build goexperiment.simd && amd64

package engine

import "simd/archsimd"

// attnDotsBlockVec does attnDotsBlock four keys at a time when the head is
// a multiple of 8 and returns how many keys it did for every query that
// sees them. Per tile of four keys, which then stay in L1, it scores the
// queries that see the tile two at a time with attnDotsPairVec's
// four-by-two register tile, so each score keeps dot1's lane tree.
func attnDotsBlockVec(sc []float32, ld int, qs [][]float32, group, p0 int, keys []float32, stride, off int) int {
	hd, nq := len(qs[0]), len(qs)
	if !useSIMD || !simdOK || hd == 0 || hd%8 != 0 {
		return 0
	}
	nk := p0 + nq/group // keys seen by the block's last position
	t := 0
	for ; t+4 <= nk; t += 4 {
		o, j := t*stride+off, firstSeeing(t, group, p0)
		for ; j+2 <= nq; j += 2 {
			a, b := sc[j*ld+t:j*ld+t+4], sc[(j+1)*ld+t:(j+1)*ld+t+4]
			attnDotsPairVec(a, b, qs[j], qs[j+1], keys, stride, o)
		}
		if j < nq {
			attnDotsVec(sc[j*ld+t:j*ld+t+4], qs[j], keys, stride, o)
		}
	}
	return t
}

// firstSeeing is the first query of a block that sees key t, rounded down
// to a pair.
func firstSeeing(t, group, p0 int) int {
	if t <= p0 {
		return 0
	}
	return (t - p0) * group &^ 1
}

// attnWeightedBlockVec does attnWeightedBlock for the heads' leading
// multiple of 8 and returns how many elements it did. It takes the values
// attnBlock rows at a time (so they stay in L1 however the cache stride
// aliases) and adds each block's rows to the outputs of the queries that
// see them, two queries per pass over the rows.
func attnWeightedBlockVec(outs [][]float32, sc []float32, ld, group, p0 int, rows []float32, stride, off int) int {
	n, nq := len(outs[0])&^7, len(outs)
	if !useSIMD || !simdOK || n == 0 {
		return 0
	}
	nk := p0 + nq/group
	seen := func(j, t0 int) []float32 { // query j's probabilities of the block at t0
		end := min(p0+j/group+1, t0+attnBlock)
		return sc[j*ld+t0 : j*ld+max(end, t0)]
	}
	for t0 := 0; t0 < nk; t0 += attnBlock {
		o, j := off+t0*stride, firstSeeing(t0, group, p0)
		for ; j+2 <= nq; j += 2 {
			weightedPair(outs[j][:n], outs[j+1][:n], seen(j, t0), seen(j+1, t0), rows, stride, o)
		}
		if j < nq {
			weightedBlock(outs[j][:n], seen(j, t0), rows, stride, o)
		}
	}
	return n
}

// weightedPair is weightedBlock for two outputs whose rows are a prefix of
// one another (len(pa) ≤ len(pb)): both take the shared rows in one pass,
// 32 elements of each in registers, each row vector loaded once for both;
// then b takes the rows only it sees.
func weightedPair(a, b, pa, pb, rows []float32, stride, off int) {
	n, la, i := len(a), len(pa), 0
	for ; la > 0 && i+32 <= n; i += 32 {
		a0, a1, a2, a3 := load8f(a[i:]), load8f(a[i+8:]), load8f(a[i+16:]), load8f(a[i+24:])
		b0, b1, b2, b3 := load8f(b[i:]), load8f(b[i+8:]), load8f(b[i+16:]), load8f(b[i+24:])
		o := off + i
		for t, w := range pa {
			r := rows[o : o+32]
			va, vb := archsimd.BroadcastFloat32x8(w), archsimd.BroadcastFloat32x8(pb[t])
			x := load8f(r)
			a0, b0 = a0.Add(x.Mul(va)), b0.Add(x.Mul(vb))
			x = load8f(r[8:])
			a1, b1 = a1.Add(x.Mul(va)), b1.Add(x.Mul(vb))
			x = load8f(r[16:])
			a2, b2 = a2.Add(x.Mul(va)), b2.Add(x.Mul(vb))
			x = load8f(r[24:])
			a3, b3 = a3.Add(x.Mul(va)), b3.Add(x.Mul(vb))
			o += stride
		}
		store8f(a[i:], a0)
		store8f(a[i+8:], a1)
		store8f(a[i+16:], a2)
		store8f(a[i+24:], a3)
		store8f(b[i:], b0)
		store8f(b[i+8:], b1)
		store8f(b[i+16:], b2)
		store8f(b[i+24:], b3)
	}
	if i < n && la > 0 {
		weightedBlock(a[i:], pa, rows, stride, off+i)
		weightedBlock(b[i:], pb[:la], rows, stride, off+i)
	}
	if len(pb) > la {
		weightedBlock(b, pb[la:], rows, stride, off+la*stride)
	}
}
