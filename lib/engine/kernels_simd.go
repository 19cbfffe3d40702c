//go:build goexperiment.simd && amd64

package engine

import "simd/archsimd"

// SIMD kernels (Go's simd/archsimd, built with GOEXPERIMENT=simd on amd64).
// They vectorise across output elements, never across a sum: each lane
// holds one output element and adds its products in the scalar kernels'
// order: fused (MulAdd, as fma32) in the matrix products, a separate
// multiply and add in dot1 and axpy (archsimd never fuses those on its
// own), so every result has the same bits as the scalar path. The
// forward product is not here: its kernels are assembly, AVX-512
// (gemm_fwd_amd64.s) or AVX2 (gemm_fwd_avx2_amd64.s), chosen in
// kernels_fwd_amd64.go.

// simdOK reports whether this CPU runs the 256-bit kernels (AVX2, and FMA3
// for MulAdd: Intel since Haswell and AMD since Zen have both; a CPU
// without FMA3 runs the scalar kernels);
// avx512 whether it also runs the 512-bit register tile.
var (
	simdOK = archsimd.X86.AVX2() && archsimd.X86.FMA()
	avx512 = archsimd.X86.AVX512()
)

// panelRows is the width of a 16-lane block of two 8-lane vectors.
const panelRows = 16

func store16(out *[panelRows]float32, a, b archsimd.Float32x8) {
	a.Store((*[8]float32)(out[:8]))
	b.Store((*[8]float32)(out[8:]))
}

// load16 loads 16 weights from w (float32) or h (bfloat16, widened exactly
// by shifting the bits into a float32's upper half).
func load16(w []float32, h []uint16, i int) (archsimd.Float32x8, archsimd.Float32x8) {
	if h != nil {
		return widen8(h[i : i+8]), widen8(h[i+8 : i+16])
	}
	return archsimd.LoadFloat32x8((*[8]float32)(w[i : i+8])), archsimd.LoadFloat32x8((*[8]float32)(w[i+8 : i+16]))
}

func widen8(h []uint16) archsimd.Float32x8 {
	return archsimd.LoadUint16x8((*[8]uint16)(h)).ExtendToUint32().ShiftAllLeft(16).AsFloat32x8()
}

// matTBlockVec is matTBlock with 16 columns × up to 4 vectors per register
// tile: each lane adds rows j0, j0+1, … of its column into xs[b][i] in
// ascending order, as the scalar kernel does.
func matTBlockVec(w mat, ys, xs [][]float32, j0, j1, c0, c1 int) bool {
	if !useSIMD {
		return false
	}
	c := c0
	if zTile && len(ys) >= zToks {
		var buf [zRows * tRows]float32
		for ; c+zRows <= c1; c += zRows {
			strip := stripBuf(w, j0, j1, c, zRows, buf[:0])
			b := 0
			for ; b+zToks <= len(ys); b += zToks {
				tBlockZ3(strip, ys[b:b+zToks], xs[b:b+zToks], j0, j1, c)
			}
			for ; b < len(ys); b++ {
				tBlock1(w, ys[b], xs[b], j0, j1, c)
				tBlock1(w, ys[b], xs[b], j0, j1, c+16)
			}
		}
	}
	for ; c+16 <= c1; c += 16 {
		b := 0
		if avx512 && len(ys) >= 6 {
			// The strip's rows are a whole matrix row apart (often 4 KiB,
			// which maps them all to one L1 set): copy it contiguous once
			// and reuse it for every vector of the batch.
			var buf [16 * tRows]float32
			strip := stripBuf(w, j0, j1, c, 16, buf[:0])
			for ; b+6 <= len(ys); b += 6 {
				tBlock6z(strip, ys[b:b+6], xs[b:b+6], j0, j1, c)
			}
		}
		for ; b+4 <= len(ys); b += 4 {
			tBlock4(w, ys[b:b+4], xs[b:b+4], j0, j1, c)
		}
		for ; b < len(ys); b++ {
			tBlock1(w, ys[b], xs[b], j0, j1, c)
		}
	}
	archsimd.ClearAVXUpperBits() // before the scalar float code (docs/engine-elementwise.md, "VZEROUPPER")
	if c < c1 {
		matTBlockScalar(w, ys, xs, j0, j1, c, c1, nil)
	}
	return true
}

func tBlock4(w mat, ys, xs [][]float32, j0, j1, c int) {
	y0, y1, y2, y3 := ys[0][:j1], ys[1][:j1], ys[2][:j1], ys[3][:j1]
	x0, x1, x2, x3 := xs[0][c:c+16], xs[1][c:c+16], xs[2][c:c+16], xs[3][c:c+16]
	a0, b0 := load16(x0, nil, 0)
	a1, b1 := load16(x1, nil, 0)
	a2, b2 := load16(x2, nil, 0)
	a3, b3 := load16(x3, nil, 0)
	for j := j0; j < j1; j++ {
		lo, hi := load16(w.data, w.bf, j*w.cols+c)
		v := archsimd.BroadcastFloat32x8(y0[j])
		a0, b0 = lo.MulAdd(v, a0), hi.MulAdd(v, b0)
		v = archsimd.BroadcastFloat32x8(y1[j])
		a1, b1 = lo.MulAdd(v, a1), hi.MulAdd(v, b1)
		v = archsimd.BroadcastFloat32x8(y2[j])
		a2, b2 = lo.MulAdd(v, a2), hi.MulAdd(v, b2)
		v = archsimd.BroadcastFloat32x8(y3[j])
		a3, b3 = lo.MulAdd(v, a3), hi.MulAdd(v, b3)
	}
	store16((*[16]float32)(x0), a0, b0)
	store16((*[16]float32)(x1), a1, b1)
	store16((*[16]float32)(x2), a2, b2)
	store16((*[16]float32)(x3), a3, b3)
}

// stripBuf appends W[j0:j1][c:c+width] to buf ([j1-j0][width],
// contiguous), widening bfloat16 exactly.
func stripBuf(w mat, j0, j1, c, width int, buf []float32) []float32 {
	for j := j0; j < j1; j++ {
		i := j*w.cols + c
		if w.bf != nil {
			for _, h := range w.bf[i : i+width] {
				buf = append(buf, bf16(h))
			}
		} else {
			buf = append(buf, w.data[i:i+width]...)
		}
	}
	return buf
}

// tBlockZ3 is tBlock4 with the AVX-512 tile: 32 columns (two 16-lane
// vectors) × three vectors of the batch, reading a strip made by stripBuf.
func tBlockZ3(strip []float32, ys, xs [][]float32, j0, j1, c int) {
	y0, y1, y2 := ys[0][:j1], ys[1][:j1], ys[2][:j1]
	x0, x1, x2 := xs[0][c:c+zRows], xs[1][c:c+zRows], xs[2][c:c+zRows]
	a0, b0 := archsimd.LoadFloat32x16((*[16]float32)(x0[:16])), archsimd.LoadFloat32x16((*[16]float32)(x0[16:]))
	a1, b1 := archsimd.LoadFloat32x16((*[16]float32)(x1[:16])), archsimd.LoadFloat32x16((*[16]float32)(x1[16:]))
	a2, b2 := archsimd.LoadFloat32x16((*[16]float32)(x2[:16])), archsimd.LoadFloat32x16((*[16]float32)(x2[16:]))
	strip = strip[:zRows*(j1-j0)]
	for j := j0; j < j1; j++ {
		q := strip[zRows*(j-j0) : zRows*(j-j0)+zRows : zRows*(j-j0)+zRows]
		lo := archsimd.LoadFloat32x16((*[16]float32)(q[:16]))
		hi := archsimd.LoadFloat32x16((*[16]float32)(q[16:]))
		v := archsimd.BroadcastFloat32x16(y0[j])
		a0, b0 = lo.MulAdd(v, a0), hi.MulAdd(v, b0)
		v = archsimd.BroadcastFloat32x16(y1[j])
		a1, b1 = lo.MulAdd(v, a1), hi.MulAdd(v, b1)
		v = archsimd.BroadcastFloat32x16(y2[j])
		a2, b2 = lo.MulAdd(v, a2), hi.MulAdd(v, b2)
	}
	a0.Store((*[16]float32)(x0[:16]))
	b0.Store((*[16]float32)(x0[16:]))
	a1.Store((*[16]float32)(x1[:16]))
	b1.Store((*[16]float32)(x1[16:]))
	a2.Store((*[16]float32)(x2[:16]))
	b2.Store((*[16]float32)(x2[16:]))
}

// tBlock6z is tBlock4 with 16-lane vectors and six vectors of the batch,
// reading the weights from a strip made by stripBuf.
func tBlock6z(strip []float32, ys, xs [][]float32, j0, j1, c int) {
	y0, y1, y2, y3, y4, y5 := ys[0][:j1], ys[1][:j1], ys[2][:j1], ys[3][:j1], ys[4][:j1], ys[5][:j1]
	x0, x1, x2 := (*[16]float32)(xs[0][c:c+16]), (*[16]float32)(xs[1][c:c+16]), (*[16]float32)(xs[2][c:c+16])
	x3, x4, x5 := (*[16]float32)(xs[3][c:c+16]), (*[16]float32)(xs[4][c:c+16]), (*[16]float32)(xs[5][c:c+16])
	a0, a1, a2 := archsimd.LoadFloat32x16(x0), archsimd.LoadFloat32x16(x1), archsimd.LoadFloat32x16(x2)
	a3, a4, a5 := archsimd.LoadFloat32x16(x3), archsimd.LoadFloat32x16(x4), archsimd.LoadFloat32x16(x5)
	for j := j0; j < j1; j++ {
		i := 16 * (j - j0)
		v := archsimd.LoadFloat32x16((*[16]float32)(strip[i : i+16]))
		a0 = v.MulAdd(archsimd.BroadcastFloat32x16(y0[j]), a0)
		a1 = v.MulAdd(archsimd.BroadcastFloat32x16(y1[j]), a1)
		a2 = v.MulAdd(archsimd.BroadcastFloat32x16(y2[j]), a2)
		a3 = v.MulAdd(archsimd.BroadcastFloat32x16(y3[j]), a3)
		a4 = v.MulAdd(archsimd.BroadcastFloat32x16(y4[j]), a4)
		a5 = v.MulAdd(archsimd.BroadcastFloat32x16(y5[j]), a5)
	}
	a0.Store(x0)
	a1.Store(x1)
	a2.Store(x2)
	a3.Store(x3)
	a4.Store(x4)
	a5.Store(x5)
}

func tBlock1(w mat, y, x []float32, j0, j1, c int) {
	y = y[:j1]
	xx := x[c : c+16]
	a, b := load16(xx, nil, 0)
	for j := j0; j < j1; j++ {
		lo, hi := load16(w.data, w.bf, j*w.cols+c)
		v := archsimd.BroadcastFloat32x8(y[j])
		a, b = lo.MulAdd(v, a), hi.MulAdd(v, b)
	}
	store16((*[16]float32)(xx), a, b)
}

// outerRowsVec is outerAcc's work on rows [lo, hi): 4 rows × 16 columns per
// register tile, each lane adding us[b][o]·vs[b][k] in ascending b.
func outerRowsVec(dst []float32, cols int, us, vs [][]float32, lo, hi int) bool {
	if !useSIMD {
		return false
	}
	var vbuf []float32 // outerZ's copy of 32 columns of vs
	for k0 := 0; k0 < cols; k0 += tCols {
		k1 := min(k0+tCols, cols)
		o := lo
		if zTile && hi-lo >= zToks {
			if vbuf == nil {
				vbuf = make([]float32, zRows*len(vs))
			}
			o = outerZ(dst, cols, us, vs, vbuf, lo, hi, k0, k1)
		}
		if avx512 {
			for ; o+6 <= hi; o += 6 {
				k := k0
				for ; k+16 <= k1; k += 16 {
					outer6z(dst, cols, us, vs, o, k)
				}
				outerTail(dst, cols, us, vs, o, o+6, k, k1)
			}
		}
		for ; o+4 <= hi; o += 4 {
			k := k0
			for ; k+16 <= k1; k += 16 {
				outer4(dst, cols, us, vs, o, k)
			}
			outerTail(dst, cols, us, vs, o, o+4, k, k1)
		}
		for ; o < hi; o++ {
			outerTail(dst, cols, us, vs, o, o+1, k0, k1)
		}
	}
	archsimd.ClearAVXUpperBits() // before the scalar float code (docs/engine-elementwise.md, "VZEROUPPER")
	return true
}

func outer4(dst []float32, cols int, us, vs [][]float32, o, k int) {
	d0, d1, d2, d3 := dst[o*cols+k:o*cols+k+16], dst[(o+1)*cols+k:(o+1)*cols+k+16], dst[(o+2)*cols+k:(o+2)*cols+k+16], dst[(o+3)*cols+k:(o+3)*cols+k+16]
	a0, b0 := load16(d0, nil, 0)
	a1, b1 := load16(d1, nil, 0)
	a2, b2 := load16(d2, nil, 0)
	a3, b3 := load16(d3, nil, 0)
	for b, u := range us {
		u = u[o : o+4 : o+4]
		lo, hi := load16(vs[b], nil, k)
		v := archsimd.BroadcastFloat32x8(u[0])
		a0, b0 = lo.MulAdd(v, a0), hi.MulAdd(v, b0)
		v = archsimd.BroadcastFloat32x8(u[1])
		a1, b1 = lo.MulAdd(v, a1), hi.MulAdd(v, b1)
		v = archsimd.BroadcastFloat32x8(u[2])
		a2, b2 = lo.MulAdd(v, a2), hi.MulAdd(v, b2)
		v = archsimd.BroadcastFloat32x8(u[3])
		a3, b3 = lo.MulAdd(v, a3), hi.MulAdd(v, b3)
	}
	store16((*[16]float32)(d0), a0, b0)
	store16((*[16]float32)(d1), a1, b1)
	store16((*[16]float32)(d2), a2, b2)
	store16((*[16]float32)(d3), a3, b3)
}

// outer6z is outer4 with 16-lane vectors and six rows.
func outer6z(dst []float32, cols int, us, vs [][]float32, o, k int) {
	d := func(r int) *[16]float32 { return (*[16]float32)(dst[(o+r)*cols+k : (o+r)*cols+k+16]) }
	d0, d1, d2, d3, d4, d5 := d(0), d(1), d(2), d(3), d(4), d(5)
	a0, a1, a2 := archsimd.LoadFloat32x16(d0), archsimd.LoadFloat32x16(d1), archsimd.LoadFloat32x16(d2)
	a3, a4, a5 := archsimd.LoadFloat32x16(d3), archsimd.LoadFloat32x16(d4), archsimd.LoadFloat32x16(d5)
	for b, u := range us {
		u = u[o : o+6 : o+6]
		v := archsimd.LoadFloat32x16((*[16]float32)(vs[b][k : k+16]))
		a0 = v.MulAdd(archsimd.BroadcastFloat32x16(u[0]), a0)
		a1 = v.MulAdd(archsimd.BroadcastFloat32x16(u[1]), a1)
		a2 = v.MulAdd(archsimd.BroadcastFloat32x16(u[2]), a2)
		a3 = v.MulAdd(archsimd.BroadcastFloat32x16(u[3]), a3)
		a4 = v.MulAdd(archsimd.BroadcastFloat32x16(u[4]), a4)
		a5 = v.MulAdd(archsimd.BroadcastFloat32x16(u[5]), a5)
	}
	a0.Store(d0)
	a1.Store(d1)
	a2.Store(d2)
	a3.Store(d3)
	a4.Store(d4)
	a5.Store(d5)
}

// outerZ does rows [lo, o) × columns [k0, k1) of outerRowsVec with the
// AVX-512 tile and returns o. The 32 columns of every vs[b] are first
// copied contiguous: the rows of vs lie a power of two apart, which maps
// them all to one L1 set.
func outerZ(dst []float32, cols int, us, vs [][]float32, vbuf []float32, lo, hi, k0, k1 int) int {
	end := lo + (hi-lo)/zToks*zToks
	k := k0
	for ; k+zRows <= k1; k += zRows {
		for b, v := range vs {
			copy(vbuf[zRows*b:zRows*b+zRows], v[k:k+zRows])
		}
		for o := lo; o < end; o += zToks {
			outerZ3(dst, cols, us, vbuf, o, k)
		}
	}
	outerTail(dst, cols, us, vs, lo, end, k, k1)
	return end
}

// outerZ3 is outer4 with the AVX-512 tile: 32 columns (two 16-lane
// vectors, vbuf[32b:32b+32] = vs[b][k:k+32]) × three rows.
func outerZ3(dst []float32, cols int, us [][]float32, vbuf []float32, o, k int) {
	d0, d1, d2 := dst[o*cols+k:o*cols+k+zRows], dst[(o+1)*cols+k:(o+1)*cols+k+zRows], dst[(o+2)*cols+k:(o+2)*cols+k+zRows]
	a0, b0 := archsimd.LoadFloat32x16((*[16]float32)(d0[:16])), archsimd.LoadFloat32x16((*[16]float32)(d0[16:]))
	a1, b1 := archsimd.LoadFloat32x16((*[16]float32)(d1[:16])), archsimd.LoadFloat32x16((*[16]float32)(d1[16:]))
	a2, b2 := archsimd.LoadFloat32x16((*[16]float32)(d2[:16])), archsimd.LoadFloat32x16((*[16]float32)(d2[16:]))
	vbuf = vbuf[:zRows*len(us)]
	for b, u := range us {
		u = u[o : o+zToks : o+zToks]
		q := vbuf[zRows*b : zRows*b+zRows : zRows*b+zRows]
		lo := archsimd.LoadFloat32x16((*[16]float32)(q[:16]))
		hi := archsimd.LoadFloat32x16((*[16]float32)(q[16:]))
		v := archsimd.BroadcastFloat32x16(u[0])
		a0, b0 = lo.MulAdd(v, a0), hi.MulAdd(v, b0)
		v = archsimd.BroadcastFloat32x16(u[1])
		a1, b1 = lo.MulAdd(v, a1), hi.MulAdd(v, b1)
		v = archsimd.BroadcastFloat32x16(u[2])
		a2, b2 = lo.MulAdd(v, a2), hi.MulAdd(v, b2)
	}
	a0.Store((*[16]float32)(d0[:16]))
	b0.Store((*[16]float32)(d0[16:]))
	a1.Store((*[16]float32)(d1[:16]))
	b1.Store((*[16]float32)(d1[16:]))
	a2.Store((*[16]float32)(d2[:16]))
	b2.Store((*[16]float32)(d2[16:]))
}

// outerTail does rows [o0, o1) × columns [k0, k1) one element at a time,
// in ascending b like the vector lanes.
func outerTail(dst []float32, cols int, us, vs [][]float32, o0, o1, k0, k1 int) {
	if o0 >= o1 || k0 >= k1 {
		return
	}
	archsimd.ClearAVXUpperBits() // the vector tiles ran before (docs/engine-elementwise.md, "VZEROUPPER")
	for o := o0; o < o1; o++ {
		for k := k0; k < k1; k++ {
			s := dst[o*cols+k]
			for b, u := range us {
				s = fma32(u[o], vs[b][k], s)
			}
			dst[o*cols+k] = s
		}
	}
}

// addVec adds v to y sixteen or eight lanes at a time (an IEEE add per
// element: putRow's bits) and returns how many it did.
func addVec(y, v []float32) int {
	if !useSIMD || len(y) < 8 || len(v) < len(y) {
		return 0
	}
	i := 0
	if avx512 {
		for ; i+16 <= len(y); i += 16 {
			yy := (*[16]float32)(y[i : i+16])
			archsimd.LoadFloat32x16(yy).Add(archsimd.LoadFloat32x16((*[16]float32)(v[i : i+16]))).Store(yy)
		}
	}
	for ; i+8 <= len(y); i += 8 {
		yy := (*[8]float32)(y[i : i+8])
		archsimd.LoadFloat32x8(yy).Add(archsimd.LoadFloat32x8((*[8]float32)(v[i : i+8]))).Store(yy)
	}
	archsimd.ClearAVXUpperBits() // scalar Go float code follows (docs/engine-elementwise.md, "VZEROUPPER")
	return i
}

// axpyVec is axpy (axpyFMA when fused) eight lanes at a time: y[i] + a·x[i]
// per element, the product rounded first or fused into the add.
func axpyVec(y []float32, a float32, x []float32, fused bool) bool {
	if !useSIMD || len(y) < 8 {
		return false
	}
	x = x[:len(y)]
	v := archsimd.BroadcastFloat32x8(a)
	i := 0
	for ; i+8 <= len(y); i += 8 {
		yy, xv := (*[8]float32)(y[i:i+8]), archsimd.LoadFloat32x8((*[8]float32)(x[i:i+8]))
		if fused {
			xv.MulAdd(v, archsimd.LoadFloat32x8(yy)).Store(yy)
		} else {
			archsimd.LoadFloat32x8(yy).Add(xv.Mul(v)).Store(yy)
		}
	}
	archsimd.ClearAVXUpperBits() // before the scalar tail (docs/engine-elementwise.md, "VZEROUPPER")
	for ; i < len(y); i++ {
		if fused {
			y[i] = fma32(a, x[i], y[i])
		} else {
			y[i] += float32(a * x[i])
		}
	}
	return true
}

// dot1Vec is dot1 with its eight accumulators in one vector: lane l sums
// the products at i ≡ l (mod 8), the tail goes to lane 0, and the lanes
// are added in dot1's tree.
func dot1Vec(w, x []float32) (float32, bool) {
	n := len(x)
	if !useSIMD || n < 8 {
		return 0, false
	}
	w = w[:n]
	var acc archsimd.Float32x8
	i := 0
	for ; i+8 <= n; i += 8 {
		acc = acc.Add(archsimd.LoadFloat32x8((*[8]float32)(w[i : i+8])).Mul(archsimd.LoadFloat32x8((*[8]float32)(x[i : i+8]))))
	}
	var s [8]float32
	acc.Store(&s)
	archsimd.ClearAVXUpperBits() // before the scalar float code (docs/engine-elementwise.md, "VZEROUPPER")
	for ; i < n; i++ {
		s[0] += float32(w[i] * x[i])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])), true
}

// The AVX-512 register tile of the backward products: zRows columns (two
// 16-lane vectors) × zToks vectors of the batch, six accumulators: the
// compiler keeps only 15 vector registers live across the loop. (Sized
// when each step also held its products before the adds; the assembly
// tiles of gemm_bwd_amd64.s take the large products.)
var zTile = avx512

const (
	zRows = 32
	zToks = 3
)
