package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// FP8Encode is exact on every E4M3 value and otherwise the nearest value
// by brute force (ties to the even code), saturating beyond 448.
func TestFP8Encode(t *testing.T) {
	for c := range 256 {
		if c&0x7f == 0x7f {
			continue
		}
		if got := FP8Encode(float32(testFP8(byte(c)))); got != byte(c) && !(c == 0x80 && got == 0) {
			t.Fatalf("code %#x: encodes back to %#x", c, got)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		v := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(24)-14)))
		best := -1
		for c := range 256 {
			if c&0x7f == 0x7f {
				continue
			}
			d, bd := math.Abs(testFP8(byte(c))-float64(v)), 0.0
			if best >= 0 {
				bd = math.Abs(testFP8(byte(best)) - float64(v))
			}
			if best < 0 || d < bd || (d == bd && c&1 == 0 && math.Signbit(testFP8(byte(c))) == math.Signbit(float64(v))) {
				best = c
			}
		}
		if math.Abs(float64(v)) >= FP8Max {
			best = int(FP8Encode(float32(math.Copysign(FP8Max, float64(v)))))
		}
		if got := FP8Encode(v); testFP8(got) != testFP8(byte(best)) {
			t.Fatalf("%g: encoded %g, nearest %g", v, testFP8(got), testFP8(byte(best)))
		}
	}
}

// testFP8 decodes E4M3 from its definition (NaN codes excluded).
func testFP8(c byte) float64 {
	e, m := int(c>>3)&15, float64(c&7)
	v := math.Ldexp(1+m/8, e-7)
	if e == 0 {
		v = math.Ldexp(m/8, -6)
	}
	if c&0x80 != 0 {
		return -v
	}
	return v
}

// FP8Value agrees with the definition on every code, the NaNs included.
func TestFP8Values(t *testing.T) {
	for c := range 256 {
		got := FP8Value(byte(c))
		if c&0x7f == 0x7f {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("code %#x: %g, want NaN", c, got)
			}
			continue
		}
		if float64(got) != testFP8(byte(c)) {
			t.Fatalf("code %#x: %g, want %g", c, got, testFP8(byte(c)))
		}
	}
}

// A weight quantised and dequantised one scale block at a time
// (FP8EncodeTile, FP8DecodeTile) gives FP8Quantize's codes and scales and
// FP8Rows' values bit for bit, on blocks cut by the matrix's edges, with
// an all-zero block, huge values (saturation) and a NaN.
func TestFP8TilesMatchRows(t *testing.T) {
	const rows, cols = 300, 200 // blocks of 128: edges of 44 rows and 72 columns
	b := [2]int{128, 128}
	r := rand.New(rand.NewPCG(9, 10))
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(30)-15)))
	}
	for i := 128; i < 256; i++ { // block (1, 0) all zero
		clear(v[i*cols : i*cols+128])
	}
	v[5*cols+150] = float32(math.NaN())
	v[290*cols+3] = 1e30
	nbr, nbc := ceilDiv(rows, b[0]), ceilDiv(cols, b[1])
	codes, scales := make([]byte, rows*cols), make([]byte, 4*nbr*nbc)
	FP8Quantize(v, cols, b, 0, rows, codes, scales)
	tcodes, tscales := make([]byte, rows*cols), make([]byte, 4*nbr*nbc)
	for bi := range nbr {
		for bj := range nbc {
			r0, c0 := bi*b[0], bj*b[1]
			h, w := min(rows-r0, b[0]), min(cols-c0, b[1])
			s := FP8EncodeTile(tcodes[r0*cols+c0:], cols, v[r0*cols+c0:], cols, h, w)
			binary.LittleEndian.PutUint32(tscales[4*(bi*nbc+bj):], math.Float32bits(s))
		}
	}
	if string(codes) != string(tcodes) || string(scales) != string(tscales) {
		t.Fatal("FP8EncodeTile differs from FP8Quantize")
	}
	want, got := make([]float32, rows*cols), make([]float32, rows*cols)
	FP8Rows(codes, scales, cols, b, 0, rows, want)
	for bi := range nbr {
		for bj := range nbc {
			r0, c0 := bi*b[0], bj*b[1]
			s := math.Float32frombits(binary.LittleEndian.Uint32(scales[4*(bi*nbc+bj):]))
			FP8DecodeTile(got[r0*cols+c0:], cols, codes[r0*cols+c0:], cols, min(rows-r0, b[0]), min(cols-c0, b[1]), s)
		}
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("element %d: FP8DecodeTile %g, FP8Rows %g", i, got[i], want[i])
		}
	}
}
