package export

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// TestDeltaRow checks a row of B'·A against a float64 sum for shapes that
// use the vector kernel, its tail, both and neither.
func TestDeltaRow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct{ rank, in int }{{1, 32}, {5, 100}, {32, 64}, {3, 7}, {8, 31}, {33, 160}} {
		u := &update{r: sh.rank, in: sh.in, out: 3, a: make([]float32, sh.rank*sh.in), b: make([]float32, 3*sh.rank)}
		for i := range u.a {
			u.a[i] = float32(r.NormFloat64())
		}
		for i := range u.b {
			u.b[i] = float32(r.NormFloat64())
		}
		d := make([]float32, sh.in)
		for o := range 3 {
			for i := range d {
				d[i] = 99 // stale values must not leak into the sum
			}
			u.deltaRow(o, d)
			for j := range d {
				want, mag := 0.0, 0.0
				for k := range sh.rank {
					p := float64(u.b[o*sh.rank+k]) * float64(u.a[k*sh.in+j])
					want, mag = want+p, mag+math.Abs(p)
				}
				if math.Abs(float64(d[j])-want) > 1e-6*mag+1e-7 {
					t.Fatalf("rank %d in %d: d[%d][%d] = %g, want %g", sh.rank, sh.in, o, j, d[j], want)
				}
			}
		}
	}
}

// TestMergeRowBF16 checks the one-pass bfloat16 row merge against widening,
// a float64 update and one rounding, with NaN, infinities, zeros and values
// whose update is zero (so rounding ties and specials pass through as is).
func TestMergeRowBF16(t *testing.T) {
	for _, in := range []int{96, 128} { // the Go path, then the one-pass kernel
		checkMergeRowBF16(t, in)
	}
}

func checkMergeRowBF16(t *testing.T, in int) {
	r := rand.New(rand.NewPCG(2, 2))
	const rank, rows = 3, 4
	u := &update{r: rank, in: in, out: rows, a: make([]float32, rank*in), b: make([]float32, rows*rank)}
	for i := range u.a {
		u.a[i] = float32(r.NormFloat64())
	}
	for i := range u.b {
		u.b[i] = float32(r.NormFloat64()) * 0.01
	}
	clear(u.b[3*rank:]) // the last row's update is zero
	w := make([]float32, rows*in)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	copy(w[3*in:], []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-40})
	src := make([]byte, 2*len(w))
	encodeRow(safetensors.BF16, w, src)
	dst := make([]byte, len(src))
	job := rowJob{in: safetensors.BF16, out: safetensors.BF16, cols: in, u: u}
	job.runAt(src, dst, 0, 0, rows, make([]float32, in), make([]float32, in))
	for o := range rows {
		for j := range in {
			base := safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(src[2*(o*in+j):]))
			s := 0.0
			for k := range rank {
				s += float64(u.b[o*rank+k]) * float64(u.a[k*in+j])
			}
			want := safetensors.Float32ToBF16(float32(float64(base) + s))
			got := binary.LittleEndian.Uint16(dst[2*(o*in+j):])
			if got != want && (o == 3 || math.Abs(float64(safetensors.BF16ToFloat32(got)-safetensors.BF16ToFloat32(want))) > math.Abs(float64(safetensors.BF16ToFloat32(want)))/64) {
				t.Fatalf("in %d row %d col %d: got %#04x, want %#04x", in, o, j, got, want)
			}
		}
	}
}

// The four-row kernel gives deltaRow's bits (the same fused sums in the
// same order), whichever kernel deltaRow takes here.
func TestDeltaRows4MatchesDeltaRow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, sz := range [][2]int{{32, 2048}, {5, 64}, {1, 32}, {17, 96}} {
		u := &update{r: sz[0], in: sz[1], out: 8, a: make([]float32, sz[0]*sz[1]), b: make([]float32, 8*sz[0])}
		for i := range u.a {
			u.a[i] = float32(r.NormFloat64())
		}
		for i := range u.b {
			u.b[i] = float32(r.NormFloat64())
		}
		v, w := make([]float32, 7*sz[1]), make([]float32, 7*sz[1])
		for i := range v {
			v[i] = float32(r.NormFloat64())
			w[i] = v[i]
		}
		addDelta(u, 1, v, sz[1])
		d := make([]float32, sz[1])
		for o := range 7 {
			u.deltaRow(1+o, d)
			for j := range d {
				if want := w[o*sz[1]+j] + d[j]; math.Float32bits(v[o*sz[1]+j]) != math.Float32bits(want) {
					t.Fatalf("rank %d, %d columns: row %d column %d: %g, want %g", sz[0], sz[1], o, j, v[o*sz[1]+j], want)
				}
			}
		}
	}
}

// The four-row bfloat16 kernel gives the one-row kernel's bits: random
// rows with NaNs (signalling and quiet), infinities, zeros, subnormals and
// values whose update is zero or rounds to a tie, rank 1, 5 and 32.
func TestMergeRows4MatchesMergeRow(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, sz := range [][3]int{{32, 2048, 0}, {5, 64, 0}, {1, 192, 0}, {1, 64, 1}} {
		rank, in, ties := sz[0], sz[1], sz[2] == 1
		a, b := make([]float32, rank*in), make([]float32, 4*rank)
		for i := range a {
			a[i] = float32(r.NormFloat64())
		}
		for i := range b {
			b[i] = float32(r.NormFloat64()) * 0.01
		}
		clear(b[3*rank:]) // row 3: the base passes through
		src := make([]byte, 8*in)
		for i := 0; i < len(src); i += 2 {
			binary.LittleEndian.PutUint16(src[i:], uint16(r.Uint32()))
		}
		if ties { // every sum exactly halfway between two bfloat16 values
			for i := range a {
				a[i] = 1.0 / 256
			}
			for i := range b {
				b[i] = 1
			}
			for i := 0; i < len(src); i += 2 {
				binary.LittleEndian.PutUint16(src[i:], 0x3f80|uint16(r.IntN(128)))
			}
		}
		specials := []uint16{0x7fc1, 0x7f81, 0xff80, 0x7f80, 0x0000, 0x8000, 0x0001, 0x807f, 0x3f81}
		for i, s := range specials {
			binary.LittleEndian.PutUint16(src[2*(i*in/len(specials)):], s)
		}
		got, want := make([]byte, len(src)), make([]byte, len(src))
		if !mergeRows4Vector(got, src, b, a, rank, in) {
			t.Skip("no AVX-512 here: the four-row kernel is not used")
		}
		for o := range 4 {
			if !mergeRowVector(want[2*o*in:], src[2*o*in:], b[o*rank:], a, rank, in) {
				t.Fatal("the one-row kernel did not run")
			}
		}
		for i := 0; i < len(got); i += 2 {
			if g, w := binary.LittleEndian.Uint16(got[i:]), binary.LittleEndian.Uint16(want[i:]); g != w {
				t.Fatalf("rank %d in %d: row %d column %d: %#04x, want %#04x (base %#04x)", rank, in, i/2/in, i/2%in, g, w, binary.LittleEndian.Uint16(src[i:]))
			}
		}
	}
}

// deltaRows gives deltaRow's bits row for row: four-row groups that share
// an A, groups cut by a change of A (one A per six rows, as a fused
// expert tensor's update has), columns the kernel does not take.
func TestDeltaRowsMatchesDeltaRow(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, in := range []int{64, 40} {
		const rank, rows, per = 7, 24, 6
		u := &update{r: rank, in: in, out: rows, rowsPerA: per, a: make([]float32, rows/per*rank*in), b: make([]float32, rows*rank)}
		for i := range u.a {
			u.a[i] = float32(r.NormFloat64())
		}
		for i := range u.b {
			u.b[i] = float32(r.NormFloat64())
		}
		clear(u.b[2*rank : 3*rank]) // a row of zeros: +0, never -0
		got, want := make([]float32, 16*in), make([]float32, in)
		for i := range got {
			got[i] = 99 // stale values must not leak in
		}
		u.deltaRows(1, 16, got)
		for k := range 16 {
			u.deltaRow(1+k, want)
			for j := range want {
				if math.Float32bits(got[k*in+j]) != math.Float32bits(want[j]) {
					t.Fatalf("in %d: row %d column %d: %g, want %g", in, 1+k, j, got[k*in+j], want[j])
				}
			}
		}
	}
}
