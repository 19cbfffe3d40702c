//go:build goexperiment.simd && amd64

package engine

import (
	"simd/archsimd"
	"sync"
	"unsafe"
)

// SIMD kernels (Go's simd/archsimd, built with GOEXPERIMENT=simd on amd64).
// They vectorise across output elements, never across a sum: each lane
// holds one output element and adds its products in the scalar kernels'
// order, with a separate multiply and add (archsimd never fuses them), so
// every result has the same bits as the scalar path in kernels.go.

// simdOK reports whether this CPU runs the 256-bit kernels (AVX2);
// avx512 whether it also runs the 512-bit register tile.
var (
	simdOK = archsimd.X86.AVX2()
	avx512 = archsimd.X86.AVX512()
)

// panelRows is the number of weight rows packed into one panel: two
// 8-lane vectors, one lane per output row.
const panelRows = 16

var panelPool = sync.Pool{New: func() any { return new([]float32) }}

// matRowsVec is matRows with vectors: for a batch it
// packs 16 weight rows at a time transposed (panel[k][lane]) and computes
// them against four vectors per pass, each lane summing its row in
// ascending k from zero, exactly as dot8 does. Rows beyond the last full
// panel go to the scalar kernel. It reports false when it did nothing.
func matRowsVec(w mat, xs, ys [][]float32, lo, hi int, accumulate bool) bool {
	if !useSIMD || hi-lo < panelRows {
		return false
	}
	if len(xs) == 1 {
		matVecVec(w, xs[0], ys[0], lo, hi, accumulate)
		return true
	}
	pp := panelPool.Get().(*[]float32)
	if cap(*pp) < panelRows*w.cols {
		*pp = make([]float32, panelRows*w.cols)
	}
	p := (*pp)[:panelRows*w.cols]
	j := lo
	for ; j+panelRows <= hi; j += panelRows {
		packPanel(w, j, p)
		panelTimes(p, xs, ys, j, accumulate)
	}
	panelPool.Put(pp)
	if j < hi {
		matRowsScalar(w, xs, ys, j, hi, accumulate)
	}
	return true
}

// packPanel writes rows [j0, j0+16) of w transposed into p:
// p[16k+l] = W[j0+l][k], widening bfloat16 exactly; 8×8 blocks are
// transposed in registers.
func packPanel(w mat, j0 int, p []float32) {
	n := w.cols
	p = p[:panelRows*n]
	n8 := n &^ 7
	for h := range 2 {
		packBlock(w.data, w.bf, (j0+8*h)*n, n, n8, p[8*h:])
	}
	for k := n8; k < n; k++ {
		for l := range panelRows {
			p[panelRows*k+l] = w.at(j0+l, k)
		}
	}
}

// at is W[j][k] as float32.
func (m mat) at(j, k int) float32 {
	if m.bf != nil {
		return bf16(m.bf[j*m.cols+k])
	}
	return m.data[j*m.cols+k]
}

// load8 loads 8 weights at i of f (float32) or h (bfloat16, widened
// exactly by shifting its bits into a float32's upper half) as bits.
func load8(f []float32, h []uint16, i int) archsimd.Uint32x8 {
	if h != nil {
		return archsimd.LoadUint16x8((*[8]uint16)(h[i : i+8])).ExtendToUint32().ShiftAllLeft(16)
	}
	return archsimd.LoadFloat32x8((*[8]float32)(f[i : i+8])).AsUint32x8()
}

// packBlock transposes 8 rows (the first at offset i, stride apart) over
// columns [0, n8) into p with a row stride of 16: p[16k+l] = row l[k].
func packBlock(f []float32, h []uint16, i, stride, n8 int, p []float32) {
	for k := 0; k < n8; k += 8 {
		r0, r1, r2, r3 := load8(f, h, i+k), load8(f, h, i+stride+k), load8(f, h, i+2*stride+k), load8(f, h, i+3*stride+k)
		r4, r5, r6, r7 := load8(f, h, i+4*stride+k), load8(f, h, i+5*stride+k), load8(f, h, i+6*stride+k), load8(f, h, i+7*stride+k)
		t0, t1, t2, t3 := r0.InterleaveLoGrouped(r1), r0.InterleaveHiGrouped(r1), r2.InterleaveLoGrouped(r3), r2.InterleaveHiGrouped(r3)
		t4, t5, t6, t7 := r4.InterleaveLoGrouped(r5), r4.InterleaveHiGrouped(r5), r6.InterleaveLoGrouped(r7), r6.InterleaveHiGrouped(r7)
		u0, u1 := t0.SelectFromPairGrouped(0, 1, 4, 5, t2), t0.SelectFromPairGrouped(2, 3, 6, 7, t2)
		u2, u3 := t1.SelectFromPairGrouped(0, 1, 4, 5, t3), t1.SelectFromPairGrouped(2, 3, 6, 7, t3)
		u4, u5 := t4.SelectFromPairGrouped(0, 1, 4, 5, t6), t4.SelectFromPairGrouped(2, 3, 6, 7, t6)
		u6, u7 := t5.SelectFromPairGrouped(0, 1, 4, 5, t7), t5.SelectFromPairGrouped(2, 3, 6, 7, t7)
		q := p[panelRows*k : panelRows*k+7*panelRows+8]
		u0.Select128FromPair(0, 2, u4).Store((*[8]uint32)(unsafeU32(q[0:8])))
		u1.Select128FromPair(0, 2, u5).Store((*[8]uint32)(unsafeU32(q[16:24])))
		u2.Select128FromPair(0, 2, u6).Store((*[8]uint32)(unsafeU32(q[32:40])))
		u3.Select128FromPair(0, 2, u7).Store((*[8]uint32)(unsafeU32(q[48:56])))
		u0.Select128FromPair(1, 3, u4).Store((*[8]uint32)(unsafeU32(q[64:72])))
		u1.Select128FromPair(1, 3, u5).Store((*[8]uint32)(unsafeU32(q[80:88])))
		u2.Select128FromPair(1, 3, u6).Store((*[8]uint32)(unsafeU32(q[96:104])))
		u3.Select128FromPair(1, 3, u7).Store((*[8]uint32)(unsafeU32(q[112:120])))
	}
}

// unsafeU32 views 8 float32s as their bits.
func unsafeU32(f []float32) []uint32 { return unsafe.Slice((*uint32)(unsafe.Pointer(&f[0])), 8) }

// matVecVec is matRows for one vector: 8 rows at a time, each 8×8 block
// of weights transposed in registers so that lane l sums row l in
// ascending k, as dot8 does.
func matVecVec(w mat, x, y []float32, lo, hi int, accumulate bool) {
	n := len(x)
	n8 := n &^ 7
	j := lo
	var out [8]float32
	for ; j+8 <= hi; j += 8 {
		mvBlock(w.data, w.bf, j*w.cols, w.cols, n8, x).Store(&out)
		for k := n8; k < n; k++ {
			for l := range out {
				out[l] += float32(w.at(j+l, k) * x[k])
			}
		}
		putRow(y[j:j+8], out[:], accumulate)
	}
	if j < hi {
		matRowsScalar(w, [][]float32{x}, [][]float32{y}, j, hi, accumulate)
	}
}

// mvBlock sums 8 rows (the first at offset i, stride apart) against x over
// columns [0, n8), one lane per row, in ascending column order.
func mvBlock(f []float32, h []uint16, i, stride, n8 int, x []float32) archsimd.Float32x8 {
	var a archsimd.Float32x8
	x = x[:n8]
	for k := 0; k+8 <= len(x); k += 8 {
		xx := x[k : k+8 : k+8]
		r0, r1, r2, r3 := load8(f, h, i+k), load8(f, h, i+stride+k), load8(f, h, i+2*stride+k), load8(f, h, i+3*stride+k)
		r4, r5, r6, r7 := load8(f, h, i+4*stride+k), load8(f, h, i+5*stride+k), load8(f, h, i+6*stride+k), load8(f, h, i+7*stride+k)
		t0, t1, t2, t3 := r0.InterleaveLoGrouped(r1), r0.InterleaveHiGrouped(r1), r2.InterleaveLoGrouped(r3), r2.InterleaveHiGrouped(r3)
		t4, t5, t6, t7 := r4.InterleaveLoGrouped(r5), r4.InterleaveHiGrouped(r5), r6.InterleaveLoGrouped(r7), r6.InterleaveHiGrouped(r7)
		u0, u1 := t0.SelectFromPairGrouped(0, 1, 4, 5, t2), t0.SelectFromPairGrouped(2, 3, 6, 7, t2)
		u2, u3 := t1.SelectFromPairGrouped(0, 1, 4, 5, t3), t1.SelectFromPairGrouped(2, 3, 6, 7, t3)
		u4, u5 := t4.SelectFromPairGrouped(0, 1, 4, 5, t6), t4.SelectFromPairGrouped(2, 3, 6, 7, t6)
		u6, u7 := t5.SelectFromPairGrouped(0, 1, 4, 5, t7), t5.SelectFromPairGrouped(2, 3, 6, 7, t7)
		a = a.Add(u0.Select128FromPair(0, 2, u4).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(xx[0])))
		a = a.Add(u1.Select128FromPair(0, 2, u5).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(xx[1])))
		a = a.Add(u2.Select128FromPair(0, 2, u6).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(xx[2])))
		a = a.Add(u3.Select128FromPair(0, 2, u7).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(xx[3])))
		a = a.Add(u0.Select128FromPair(1, 3, u4).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(xx[4])))
		a = a.Add(u1.Select128FromPair(1, 3, u5).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(xx[5])))
		a = a.Add(u2.Select128FromPair(1, 3, u6).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(xx[6])))
		a = a.Add(u3.Select128FromPair(1, 3, u7).AsFloat32x8().Mul(archsimd.BroadcastFloat32x8(xx[7])))
	}
	return a
}

// panelTimes computes one packed panel (rows j0..j0+15) against every
// vector of xs, four vectors per pass, then one at a time.
func panelTimes(p []float32, xs, ys [][]float32, j0 int, accumulate bool) {
	var out [8][panelRows]float32
	b := 0
	if avx512 {
		for ; b+6 <= len(xs); b += 6 {
			panel6z(p, xs[b:b+6], &out)
			for t := range 6 {
				putRow(ys[b+t][j0:j0+panelRows], out[t][:], accumulate)
			}
		}
	}
	for ; b+4 <= len(xs); b += 4 {
		panel4(p, xs[b], xs[b+1], xs[b+2], xs[b+3], (*[4][panelRows]float32)(out[:4]))
		for t := range 4 {
			putRow(ys[b+t][j0:j0+panelRows], out[t][:], accumulate)
		}
	}
	for ; b < len(xs); b++ {
		panel1(p, xs[b], &out[0])
		putRow(ys[b][j0:j0+panelRows], out[0][:], accumulate)
	}
}

func putRow(y, v []float32, accumulate bool) {
	if !accumulate {
		copy(y, v)
		return
	}
	v = v[:len(y)]
	for i := range y {
		y[i] += v[i]
	}
}

// panel6z is the AVX-512 register tile: 16 rows (one 16-lane vector) × 6
// vectors, the same operations per lane as panel4; six accumulators leave
// the compiler's 16 vector registers enough room not to spill.
func panel6z(p []float32, xs [][]float32, out *[8][panelRows]float32) {
	n := len(xs[0])
	x0, x1, x2, x3, x4, x5 := xs[0][:n], xs[1][:n], xs[2][:n], xs[3][:n], xs[4][:n], xs[5][:n]
	p = p[:panelRows*n]
	var a0, a1, a2, a3, a4, a5 archsimd.Float32x16
	for k := range n {
		w := archsimd.LoadFloat32x16((*[16]float32)(p[panelRows*k : panelRows*k+panelRows]))
		a0 = a0.Add(w.Mul(archsimd.BroadcastFloat32x16(x0[k])))
		a1 = a1.Add(w.Mul(archsimd.BroadcastFloat32x16(x1[k])))
		a2 = a2.Add(w.Mul(archsimd.BroadcastFloat32x16(x2[k])))
		a3 = a3.Add(w.Mul(archsimd.BroadcastFloat32x16(x3[k])))
		a4 = a4.Add(w.Mul(archsimd.BroadcastFloat32x16(x4[k])))
		a5 = a5.Add(w.Mul(archsimd.BroadcastFloat32x16(x5[k])))
	}
	a0.Store(&out[0])
	a1.Store(&out[1])
	a2.Store(&out[2])
	a3.Store(&out[3])
	a4.Store(&out[4])
	a5.Store(&out[5])
}

// panel4 is the register tile: 16 rows × 4 vectors, eight accumulators.
func panel4(p []float32, x0, x1, x2, x3 []float32, out *[4][panelRows]float32) {
	n := len(x0)
	x1, x2, x3 = x1[:n], x2[:n], x3[:n]
	p = p[:panelRows*n]
	var a0, b0, a1, b1, a2, b2, a3, b3 archsimd.Float32x8
	for k := range n {
		q := p[panelRows*k : panelRows*k+panelRows : panelRows*k+panelRows]
		lo := archsimd.LoadFloat32x8((*[8]float32)(q[:8]))
		hi := archsimd.LoadFloat32x8((*[8]float32)(q[8:]))
		v := archsimd.BroadcastFloat32x8(x0[k])
		a0, b0 = a0.Add(lo.Mul(v)), b0.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(x1[k])
		a1, b1 = a1.Add(lo.Mul(v)), b1.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(x2[k])
		a2, b2 = a2.Add(lo.Mul(v)), b2.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(x3[k])
		a3, b3 = a3.Add(lo.Mul(v)), b3.Add(hi.Mul(v))
	}
	store16(&out[0], a0, b0)
	store16(&out[1], a1, b1)
	store16(&out[2], a2, b2)
	store16(&out[3], a3, b3)
}

func panel1(p []float32, x []float32, out *[panelRows]float32) {
	n := len(x)
	p = p[:panelRows*n]
	var a, b archsimd.Float32x8
	for k, xv := range x {
		q := p[panelRows*k : panelRows*k+panelRows : panelRows*k+panelRows]
		v := archsimd.BroadcastFloat32x8(xv)
		a = a.Add(archsimd.LoadFloat32x8((*[8]float32)(q[:8])).Mul(v))
		b = b.Add(archsimd.LoadFloat32x8((*[8]float32)(q[8:])).Mul(v))
	}
	store16(out, a, b)
}

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
	for ; c+16 <= c1; c += 16 {
		b := 0
		if avx512 && len(ys) >= 6 {
			// The strip's rows are a whole matrix row apart (often 4 KiB,
			// which maps them all to one L1 set): copy it contiguous once
			// and reuse it for every vector of the batch.
			var buf [16 * tRows]float32
			strip := stripBuf(w, j0, j1, c, buf[:0])
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
		a0, b0 = a0.Add(lo.Mul(v)), b0.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(y1[j])
		a1, b1 = a1.Add(lo.Mul(v)), b1.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(y2[j])
		a2, b2 = a2.Add(lo.Mul(v)), b2.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(y3[j])
		a3, b3 = a3.Add(lo.Mul(v)), b3.Add(hi.Mul(v))
	}
	store16((*[16]float32)(x0), a0, b0)
	store16((*[16]float32)(x1), a1, b1)
	store16((*[16]float32)(x2), a2, b2)
	store16((*[16]float32)(x3), a3, b3)
}

// stripBuf appends W[j0:j1][c:c+16] to buf ([j1-j0][16], contiguous),
// widening bfloat16 exactly.
func stripBuf(w mat, j0, j1, c int, buf []float32) []float32 {
	for j := j0; j < j1; j++ {
		i := j*w.cols + c
		if w.bf != nil {
			for _, h := range w.bf[i : i+16] {
				buf = append(buf, bf16(h))
			}
		} else {
			buf = append(buf, w.data[i:i+16]...)
		}
	}
	return buf
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
		a0 = a0.Add(v.Mul(archsimd.BroadcastFloat32x16(y0[j])))
		a1 = a1.Add(v.Mul(archsimd.BroadcastFloat32x16(y1[j])))
		a2 = a2.Add(v.Mul(archsimd.BroadcastFloat32x16(y2[j])))
		a3 = a3.Add(v.Mul(archsimd.BroadcastFloat32x16(y3[j])))
		a4 = a4.Add(v.Mul(archsimd.BroadcastFloat32x16(y4[j])))
		a5 = a5.Add(v.Mul(archsimd.BroadcastFloat32x16(y5[j])))
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
		a, b = a.Add(lo.Mul(v)), b.Add(hi.Mul(v))
	}
	store16((*[16]float32)(xx), a, b)
}

// outerRowsVec is outerAcc's work on rows [lo, hi): 4 rows × 16 columns per
// register tile, each lane adding us[b][o]·vs[b][k] in ascending b.
func outerRowsVec(dst []float32, cols int, us, vs [][]float32, lo, hi int) bool {
	if !useSIMD {
		return false
	}
	for k0 := 0; k0 < cols; k0 += tCols {
		k1 := min(k0+tCols, cols)
		o := lo
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
		a0, b0 = a0.Add(lo.Mul(v)), b0.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(u[1])
		a1, b1 = a1.Add(lo.Mul(v)), b1.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(u[2])
		a2, b2 = a2.Add(lo.Mul(v)), b2.Add(hi.Mul(v))
		v = archsimd.BroadcastFloat32x8(u[3])
		a3, b3 = a3.Add(lo.Mul(v)), b3.Add(hi.Mul(v))
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
		a0 = a0.Add(v.Mul(archsimd.BroadcastFloat32x16(u[0])))
		a1 = a1.Add(v.Mul(archsimd.BroadcastFloat32x16(u[1])))
		a2 = a2.Add(v.Mul(archsimd.BroadcastFloat32x16(u[2])))
		a3 = a3.Add(v.Mul(archsimd.BroadcastFloat32x16(u[3])))
		a4 = a4.Add(v.Mul(archsimd.BroadcastFloat32x16(u[4])))
		a5 = a5.Add(v.Mul(archsimd.BroadcastFloat32x16(u[5])))
	}
	a0.Store(d0)
	a1.Store(d1)
	a2.Store(d2)
	a3.Store(d3)
	a4.Store(d4)
	a5.Store(d5)
}

// outerTail does rows [o0, o1) × columns [k0, k1) one element at a time,
// in ascending b like the vector lanes.
func outerTail(dst []float32, cols int, us, vs [][]float32, o0, o1, k0, k1 int) {
	for o := o0; o < o1; o++ {
		for k := k0; k < k1; k++ {
			s := dst[o*cols+k]
			for b, u := range us {
				s += float32(u[o] * vs[b][k])
			}
			dst[o*cols+k] = s
		}
	}
}

// axpyVec is axpy eight lanes at a time: y[i] + a·x[i] per element.
func axpyVec(y []float32, a float32, x []float32) bool {
	if !useSIMD || len(y) < 8 {
		return false
	}
	x = x[:len(y)]
	v := archsimd.BroadcastFloat32x8(a)
	i := 0
	for ; i+8 <= len(y); i += 8 {
		yy := (*[8]float32)(y[i : i+8])
		archsimd.LoadFloat32x8(yy).Add(archsimd.LoadFloat32x8((*[8]float32)(x[i : i+8])).Mul(v)).Store(yy)
	}
	for ; i < len(y); i++ {
		y[i] += float32(a * x[i])
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
	for ; i < n; i++ {
		s[0] += float32(w[i] * x[i])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])), true
}
