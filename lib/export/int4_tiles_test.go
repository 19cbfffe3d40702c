package export

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// An INT4 weight made a tile at a time (int4Tiles) is the weight the
// row-band path makes (Int4Rows, addDelta, Int4Quantize or encodeRow) bit
// for bit: requantised codes and scales, and bfloat16 when dequantising;
// groups of 32 and 128, tiles cut by the right edge and the last rows, a
// pipeline block starting at row 128, an update of rank 5 (the four-row
// kernel and single rows) and none.
func TestInt4TilesMatchBands(t *testing.T) {
	if !haveAVX2() {
		t.Skip("no vector update kernel here: INT4 weights take the row-band path")
	}
	const rows, cols, rank = 302, 384, 5
	r := rand.New(rand.NewPCG(21, 22))
	packed := make([]byte, rows*cols/2)
	for i := range packed {
		packed[i] = byte(r.Uint32())
	}
	u := &update{r: rank, in: cols, out: rows, a: make([]float32, rank*cols), b: make([]float32, rows*rank)}
	for i := range u.a {
		u.a[i] = float32(r.NormFloat64())
	}
	for i := range u.b {
		u.b[i] = float32(r.NormFloat64()) * 1e-3
	}
	for _, g := range []int{32, 128} {
		scales := make([]byte, 2*rows*cols/g)
		for i := 0; i < len(scales); i += 2 {
			binary.LittleEndian.PutUint16(scales[i:], safetensors.Float32ToBF16(float32(1e-3*(0.5+r.Float64()))))
		}
		for _, up := range []*update{u, nil} {
			for _, dt := range []safetensors.DType{"", safetensors.BF16} {
				want, wantScales := int4Bands(packed, scales, up, cols, g, dt)
				outRow := cols / 2
				if dt != "" {
					outRow = cols * dt.Size()
				}
				got := make([]byte, rows*outRow)
				j := &int4Tiles{u: up, group: g, cols: cols, width: g * max(1, 256/g), scales: scales, dt: dt}
				if dt == "" {
					j.fresh = make([]byte, len(scales))
				}
				var bufs tileBufs
				j.run(packed[:128*cols/2], got, 0, 128, outRow, &bufs)
				j.run(packed[128*cols/2:], got[128*outRow:], 128, rows-128, outRow, &bufs)
				if string(got) != string(want) || string(j.fresh) != string(wantScales) {
					t.Fatalf("group %d, update %v, dtype %q: the tile-at-a-time weight differs from the row-band one", g, up != nil, dt)
				}
			}
		}
	}
}

// int4Bands is the row-band path on the whole weight at once.
func int4Bands(packed, scales []byte, u *update, cols, g int, dt safetensors.DType) ([]byte, []byte) {
	rows := 2 * len(packed) / cols
	v := make([]float32, rows*cols)
	quant.Int4Rows(packed, scales, cols, g, 0, rows, v)
	addDelta(u, 0, v, cols)
	if dt != "" {
		out := make([]byte, rows*cols*dt.Size())
		encodeRow(dt, v, out)
		return out, nil
	}
	out, fresh := make([]byte, rows*cols/2), make([]byte, len(scales))
	for r := range rows {
		quant.Int4Quantize(v[r*cols:(r+1)*cols], g, out[r*cols/2:], fresh[r*2*cols/g:])
	}
	return out, fresh
}
