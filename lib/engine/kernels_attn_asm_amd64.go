//go:build goexperiment.simd

package engine

import "unsafe"

//go:generate go run ./internal/asmgen/attn

// The attention's AVX-512 register tiles (kernels_attn_amd64.s, generated
// by internal/asmgen/attn): the 512-bit blocked kernels hand them their
// whole tiles and keep the Go loops for the rest. Without AVX-512 the AVX2
// tiles (attnTileY, kernels_attn_avx2.go) take the same calls in 16-column
// strips. They do each lane's fused multiply-adds in the Go kernels'
// order, so the bits are the same.

// attnTileZ[r-1] adds r rows of Σ_p A[i][p]·B[p][:64] to C, p ascending
// (A[i][p] at a + i·lda + p·ldp bytes).
var attnTileZ = [...]func(c *float32, ldc uintptr, a *float32, lda uintptr, ldp uintptr, b *float32, ldb uintptr, k int){
	attnTileZ1, attnTileZ2, attnTileZ3, attnTileZ4, attnTileZ5, attnTileZ6,
}

// weightedTile adds Σ_{p<k} a[i·lda+p]·b[p·ldb:][:n] to c[i·ldc:][:n] for
// rows i < rows (at most len(attnTileZ)), each element in ascending p, in
// column strips of weightedStrip(); strides in floats, n a multiple of it.
func weightedTile(c unsafe.Pointer, ldc int, a unsafe.Pointer, lda int, b unsafe.Pointer, ldb, k, rows, n int) {
	weightedTileT(c, ldc, a, lda, 1, b, ldb, k, rows, n)
}

// weightedTileT is weightedTile with A's p-th column ldp floats after
// its (p−1)-th: a[i·lda+p·ldp].
func weightedTileT(c unsafe.Pointer, ldc int, a unsafe.Pointer, lda, ldp int, b unsafe.Pointer, ldb, k, rows, n int) {
	if k == 0 {
		return
	}
	tz, w := weightedTileFor(rows), weightedStrip()
	for col := 0; col < n; col += w {
		tz((*float32)(unsafe.Add(c, 4*col)), uintptr(4*ldc), (*float32)(a), uintptr(4*lda), uintptr(4*ldp), (*float32)(unsafe.Add(b, 4*col)), uintptr(4*ldb), k)
	}
}

// stridedRows reports whether each xs[i] starts ldc elements after
// xs[i-step] (one ldc for all, ≥ the rows' length), and that ldc: a
// block's outputs of one query head (every step-th, consecutive
// positions) then form a tile's rows. With step or fewer rows any ldc
// serves; it is then the rows' length.
func stridedRows(xs [][]float32, step int) (int, bool) {
	if len(xs) <= step {
		return len(xs[0]), true
	}
	a, b := uintptr(unsafe.Pointer(&xs[0][0])), uintptr(unsafe.Pointer(&xs[step][0]))
	ldc := int((b - a) / 4)
	if b < a || (b-a)%4 != 0 || ldc < len(xs[0]) {
		return 0, false
	}
	for i := step + 1; i < len(xs); i++ { // as integers: see evenRows
		if uintptr(unsafe.Pointer(&xs[i][0])) != uintptr(unsafe.Pointer(&xs[i-step][0]))+uintptr(4*ldc) {
			return 0, false
		}
	}
	return ldc, true
}
