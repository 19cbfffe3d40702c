//go:build goexperiment.simd && amd64

package engine

import "unsafe"

// attnScatterBlockVec does attnScatterBlock for the heads' leading
// multiple of 8 and returns how many elements it did. Keys that every
// query of the block sees go two at a time (weightedPair: each packed head
// vector loaded once for both, 16 elements of both gradients held in
// registers across the block's queries); the block's own positions, seen
// by fewer queries each, one at a time.
func attnScatterBlockVec(outs [][]float32, off int, w, rows []float32, nq, group, p0 int) int {
	hd := len(rows) / nq
	n := hd &^ 7
	if !useSIMD || !simdOK || n == 0 || len(w) < len(outs)*nq || off < 0 {
		return 0
	}
	for _, o := range outs {
		if off+hd > len(o) {
			return 0
		}
	}
	r, t := unsafe.Pointer(&rows[0]), 0
	for ; t+2 <= min(p0+1, len(outs)); t += 2 {
		a, b := unsafe.Pointer(&outs[t][off]), unsafe.Pointer(&outs[t+1][off])
		weightedPair(a, b, w[t*nq:(t+1)*nq], w[(t+1)*nq:(t+2)*nq], r, hd, n)
	}
	for ; t < len(outs); t++ {
		j0 := firstSeer(t, group, p0)
		weighted1(unsafe.Pointer(&outs[t][off]), w[t*nq+j0:(t+1)*nq], unsafe.Add(r, 4*j0*hd), hd, n)
	}
	return n
}
