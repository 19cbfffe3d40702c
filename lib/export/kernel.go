package export

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// update is one module's LoRA update in float32, ready to merge: A [r, in]
// and B' = scale·B [out, r]. A fused expert tensor's update has one A per
// block of rowsPerA rows (experts.go); 0 means one A for every row.
type update struct {
	r, in, out int
	a, b       []float32
	rowsPerA   int
}

// aOf is the A that row o's update multiplies.
func (u *update) aOf(o int) []float32 {
	if u.rowsPerA == 0 {
		return u.a
	}
	k := o / u.rowsPerA
	return u.a[k*u.r*u.in : (k+1)*u.r*u.in]
}

// sameA reports whether rows o…o+n-1 all multiply the same A.
func (u *update) sameA(o, n int) bool {
	return u.rowsPerA == 0 || o/u.rowsPerA == (o+n-1)/u.rowsPerA
}

func newUpdate(m Module, scale float32) (*update, error) {
	a, err := m.A.Float32()
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", m.Path, err)
	}
	b, err := m.B.Float32()
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", m.Path, err)
	}
	for i := range b {
		b[i] *= scale
	}
	return &update{r: int(m.A.Shape[0]), in: int(m.A.Shape[1]), out: int(m.B.Shape[0]), a: a, b: b}, nil
}

// deltaRow sets d to row o of B'·A: the vector kernel where the CPU has
// one (columns in blocks of 32), the rest here, four rank terms at a time.
// Sums are in float32.
func (u *update) deltaRow(o int, d []float32) {
	b, in, ua := u.b[o*u.r:(o+1)*u.r], u.in, u.aOf(o)
	n := in &^ 31
	if !deltaVector(d, b, ua, u.r, in, n) {
		n = 0
	}
	tail := d[n:]
	clear(tail)
	k := 0
	for ; k+4 <= u.r; k += 4 {
		b0, b1, b2, b3 := b[k], b[k+1], b[k+2], b[k+3]
		a0 := ua[k*in+n : (k+1)*in]
		a1 := ua[(k+1)*in+n : (k+2)*in]
		a2 := ua[(k+2)*in+n : (k+3)*in]
		a3 := ua[(k+3)*in+n : (k+4)*in]
		a1, a2, a3 = a1[:len(a0)], a2[:len(a0)], a3[:len(a0)]
		t := tail[:len(a0)]
		for j := range t {
			t[j] += b0*a0[j] + b1*a1[j] + b2*a2[j] + b3*a3[j]
		}
	}
	for ; k < u.r; k++ {
		bk, ak := b[k], ua[k*in+n:(k+1)*in]
		t := tail[:len(ak)]
		for j := range t {
			t[j] += bk * ak[j]
		}
	}
}

// deltaRows sets d[k·in…(k+1)·in] to row o+k of B'·A for k < n: four
// rows at a time by the AVX-512 kernel where they share an A, added onto
// zeros (a fused sum that starts from +0 is never -0, so 0 + sum has the
// sum's bits), the rest by deltaRow; the bits are deltaRow's either way.
func (u *update) deltaRows(o, n int, d []float32) {
	k, in := 0, u.in
	for ; in%32 == 0 && k+4 <= n && u.sameA(o+k, 4); k += 4 {
		clear(d[k*in : (k+4)*in])
		if !addRows4Vector(d[k*in:], in, u.b[(o+k)*u.r:], u.aOf(o+k), u.r, in, in) {
			break
		}
	}
	for ; k < n; k++ {
		u.deltaRow(o+k, d[k*in:(k+1)*in])
	}
}

// decodeRow widens one row of src (dtype dt) into dst.
func decodeRow(dt safetensors.DType, src []byte, dst []float32) {
	switch dt {
	case safetensors.F32:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case safetensors.BF16:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	case safetensors.F16:
		for i := range dst {
			dst[i] = safetensors.F16ToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	}
}

// encodeRow rounds src into dst's dtype dt (round to nearest even).
func encodeRow(dt safetensors.DType, src []float32, dst []byte) {
	switch dt {
	case safetensors.F32:
		dst = dst[:4*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case safetensors.BF16:
		dst = dst[:2*len(src)]
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], safetensors.Float32ToBF16(v))
		}
	case safetensors.F16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], safetensors.Float32ToF16(v))
		}
	}
}

// rowJob turns rows [lo, hi) of a [rows, cols] tensor from src (dtype in)
// into dst (dtype out), adding u's update when u is not nil.
type rowJob struct {
	in, out safetensors.DType
	cols    int
	u       *update
}

// parallelRows runs job over rows [0, n) of a block, in runs of rowRun
// rows handed to the cores one by one (so a core the writer slows down
// takes fewer); each worker has its own row buffers.
func (j rowJob) parallelRows(src, dst []byte, base, n int, bufs *rowBufs) {
	units := ceilDiv(n, rowRun)
	for k := range unitWorkers(units) { // each worker's buffers, made before they start
		bufs.get(k, j.cols)
	}
	parallelUnits(units, func(k, i int) {
		w, d := bufs.get(k, j.cols)
		j.runAt(src, dst, base, i*rowRun, min(n, (i+1)*rowRun), w, d)
	})
}

// rowRun is how many rows a worker takes at a time: a multiple of the
// four-row kernels' four, small enough for a block to split evenly.
const rowRun = 32

// runAt is run for the block whose first row is base: src and dst hold
// only the block, the update is indexed by the tensor's row.
func (j rowJob) runAt(src, dst []byte, base, lo, hi int, w, d []float32) {
	isz, osz := j.in.Size()*j.cols, j.out.Size()*j.cols
	fused := j.u != nil && j.in == safetensors.BF16 && j.out == safetensors.BF16
	for o := lo; o < hi; o++ {
		if fused && o+4 <= hi && j.u.sameA(base+o, 4) && mergeRows4Vector(dst[o*osz:(o+4)*osz], src[o*isz:(o+4)*isz], j.u.b[(base+o)*j.u.r:(base+o+4)*j.u.r], j.u.aOf(base+o), j.u.r, j.cols) {
			o += 3
			continue
		}
		if fused && mergeRowVector(dst[o*osz:(o+1)*osz], src[o*isz:(o+1)*isz], j.u.b[(base+o)*j.u.r:(base+o+1)*j.u.r], j.u.aOf(base+o), j.u.r, j.cols) {
			continue
		}
		decodeRow(j.in, src[o*isz:(o+1)*isz], w)
		if j.u != nil {
			j.u.deltaRow(base+o, d)
			for i := range w {
				w[i] += d[i]
			}
		}
		encodeRow(j.out, w, dst[o*osz:(o+1)*osz])
	}
}

// rowBufs keeps each worker's float32 row buffers across tensors.
type rowBufs struct{ w, d [][]float32 }

func (b *rowBufs) get(k, cols int) ([]float32, []float32) {
	for len(b.w) <= k {
		b.w, b.d = append(b.w, nil), append(b.d, nil)
	}
	if cap(b.w[k]) < cols {
		b.w[k], b.d[k] = make([]float32, cols), make([]float32, cols)
	}
	return b.w[k][:cols], b.d[k][:cols]
}
