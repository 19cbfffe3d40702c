package export

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// An FP8 weight made one scale block at a time (fp8Tiles) is the weight
// the row-band path makes (FP8Rows, addDelta, FP8Quantize or encodeRow)
// bit for bit: requantised codes and scales, and bfloat16 when
// dequantising; blocks cut by the edges, a pipeline block starting at row
// 128, an update of rank 5 (one-pass four-row kernel and single rows) and
// none.
func TestFP8TilesMatchBands(t *testing.T) {
	const rows, cols = 302, 320 // the last band: 46 rows, 2 past the four-row groups
	codes, scales, u, b := fp8TileCase(rows, cols)
	nbc := ceilDiv(cols, b[1])
	for _, up := range []*update{u, nil} {
		for _, dt := range []safetensors.DType{"", safetensors.BF16} {
			want, wantScales := fp8Bands(codes, scales, up, cols, b, dt)
			sz := 1
			if dt != "" {
				sz = dt.Size()
			}
			got := make([]byte, rows*cols*sz)
			j := &fp8Tiles{u: up, b: b, cols: cols, nbc: nbc, scales: scales, dt: dt}
			if dt == "" {
				j.fresh = make([]byte, len(scales))
			}
			var bufs tileBufs
			j.run(codes[:128*cols], got, 0, 128, cols*sz, &bufs)
			j.run(codes[128*cols:], got[128*cols*sz:], 128, rows-128, cols*sz, &bufs)
			if string(got) != string(want) || string(j.fresh) != string(wantScales) {
				t.Fatalf("update %v, dtype %q: the block-at-a-time weight differs from the row-band one", up != nil, dt)
			}
		}
	}
}

// fp8TileCase is a random FP8 weight (no NaN codes), its 128×128 scales
// and a rank-5 update.
func fp8TileCase(rows, cols int) (codes, scales []byte, u *update, b [2]int) {
	const rank = 5
	b = [2]int{128, 128}
	r := rand.New(rand.NewPCG(11, 12))
	codes = make([]byte, rows*cols)
	for i := range codes {
		if codes[i] = byte(r.Uint32()); codes[i]&0x7f == 0x7f {
			codes[i]--
		}
	}
	scales = make([]byte, 4*ceilDiv(rows, b[0])*ceilDiv(cols, b[1]))
	for i := 0; i < len(scales); i += 4 {
		binary.LittleEndian.PutUint32(scales[i:], math.Float32bits(float32(1e-3*(0.5+r.Float64()))))
	}
	u = &update{r: rank, in: cols, out: rows, a: make([]float32, rank*cols), b: make([]float32, rows*rank)}
	for i := range u.a {
		u.a[i] = float32(r.NormFloat64())
	}
	for i := range u.b {
		u.b[i] = float32(r.NormFloat64()) * 1e-3
	}
	return codes, scales, u, b
}

// The shard pipeline's jobs (queue: each unit reads its row of scale
// blocks from the file) make the bytes run makes, scales included; a unit
// that cannot read fails the pool.
func TestFP8QueueMatchesRun(t *testing.T) {
	const rows, cols, off = 302, 320, 77
	codes, scales, u, b := fp8TileCase(rows, cols)
	path := filepath.Join(t.TempDir(), "shard")
	if err := os.WriteFile(path, append(make([]byte, off), codes...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, dt := range []safetensors.DType{"", safetensors.BF16} {
		sz := max(1, dt.Size())
		mk := func() *fp8Tiles {
			j := &fp8Tiles{u: u, b: b, cols: cols, nbc: ceilDiv(cols, b[1]), scales: scales, dt: dt}
			if dt == "" {
				j.fresh = make([]byte, len(scales))
			}
			return j
		}
		want, got := make([]byte, rows*cols*sz), make([]byte, rows*cols*sz)
		jw, jg := mk(), mk()
		jw.run(codes, want, 0, rows, cols*sz, &tileBufs{})
		p := newUnitPool()
		jg.queue(p, f, off, got, 0, 256, cols*sz)
		jg.queue(p, f, off, got[256*cols*sz:], 256, rows-256, cols*sz)
		if err := p.close(); err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) || string(jg.fresh) != string(jw.fresh) {
			t.Fatalf("dtype %q: the queued weight differs from run's", dt)
		}
		p = newUnitPool()
		jg.queue(p, f, off+100, got, 0, rows, cols*sz) // its last rows are past the end
		if err := p.close(); err == nil {
			t.Fatal("a unit reading past the end of the shard passed")
		}
	}
}

// fp8Bands is the row-band path on the whole weight at once.
func fp8Bands(codes, scales []byte, u *update, cols int, b [2]int, dt safetensors.DType) ([]byte, []byte) {
	rows := len(codes) / cols
	v := make([]float32, rows*cols)
	quant.FP8Rows(codes, scales, cols, b, 0, rows, v)
	addDelta(u, 0, v, cols)
	if dt != "" {
		out := make([]byte, rows*cols*dt.Size())
		encodeRow(dt, v, out)
		return out, nil
	}
	out, fresh := make([]byte, rows*cols), make([]byte, len(scales))
	quant.FP8Quantize(v, cols, b, 0, rows, out, fresh)
	return out, fresh
}

// The one-pass kernel gives the separate passes' bits (FP8DecodeTile,
// then the four-row update, then FP8AbsMax): every code (NaNs and
// subnormals included) at 64- and 32-column strips, scales that are odd,
// tiny, negative, infinite and NaN, an update of rank 3.
func TestFP8AddRows4MatchesPasses(t *testing.T) {
	const ld, cols, rank = 100, 96, 3 // a strip of 64 and one of 32
	r := rand.New(rand.NewPCG(17, 18))
	codes := make([]byte, 4*ld)
	for i := range codes {
		codes[i] = byte(i*5 + i/256)
	}
	a, b := make([]float32, rank*cols), make([]float32, 4*rank)
	for i := range a {
		a[i] = float32(r.NormFloat64())
	}
	for i := range b {
		b[i] = float32(r.NormFloat64()) * 1e-3
	}
	for _, s := range []float32{1.7e-3, 1e-40, -2, float32(math.Inf(1)), float32(math.NaN())} {
		got, want := make([]float32, 4*cols), make([]float32, 4*cols)
		m, ok := fp8AddRows4Vector(got, cols, codes, ld, s, b, a, rank, cols, cols)
		if !ok {
			t.Skip("no AVX-512 here: the one-pass kernel is not used")
		}
		quant.FP8DecodeTile(want, cols, codes, ld, 4, cols, s)
		addRows4Vector(want, cols, b, a, rank, cols, cols)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("scale %g: element %d (code %#02x): %#x, want %#x", s, i, codes[i/cols*ld+i%cols], math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
		if w := quant.FP8AbsMax(want, cols, 4, cols); m != w {
			t.Fatalf("scale %g: largest magnitude %#x, want %#x", s, m, w)
		}
	}
}
