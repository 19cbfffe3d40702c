package export

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// An FP8 weight made one scale block at a time (fp8Tiles) is the weight
// the row-band path makes (FP8Rows, addDelta, FP8Quantize or encodeRow)
// bit for bit: requantised codes and scales, and bfloat16 when
// dequantising; blocks cut by the edges, a pipeline block starting at row
// 128, an update of rank 5 (four-row kernel and single rows) and none.
func TestFP8TilesMatchBands(t *testing.T) {
	const rows, cols, rank = 300, 320, 5
	b := [2]int{128, 128}
	r := rand.New(rand.NewPCG(11, 12))
	codes := make([]byte, rows*cols)
	for i := range codes {
		if codes[i] = byte(r.Uint32()); codes[i]&0x7f == 0x7f {
			codes[i]--
		}
	}
	nbr, nbc := ceilDiv(rows, b[0]), ceilDiv(cols, b[1])
	scales := make([]byte, 4*nbr*nbc)
	for i := 0; i < len(scales); i += 4 {
		binary.LittleEndian.PutUint32(scales[i:], math.Float32bits(float32(1e-3*(0.5+r.Float64()))))
	}
	u := &update{r: rank, in: cols, out: rows, a: make([]float32, rank*cols), b: make([]float32, rows*rank)}
	for i := range u.a {
		u.a[i] = float32(r.NormFloat64())
	}
	for i := range u.b {
		u.b[i] = float32(r.NormFloat64()) * 1e-3
	}
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
