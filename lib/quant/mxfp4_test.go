package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// MXFP4Decode gives, for every scale byte and every code byte, the code's
// E2M1 value times the scale 2^(scale-127) rounded to float32 (the
// infinity for byte 255, so NaN for a zero code), bit for bit; code 8
// gives +0, as the table has always held it.
func TestMXFP4DecodeAllCodes(t *testing.T) {
	blocks, scales := make([]byte, 256*16), make([]byte, 256*16)
	for i := range blocks {
		blocks[i] = byte(i)
	}
	var sc []byte
	for s := range 256 {
		sc = append(sc, scales[:0]...)
		for range 16 {
			sc = append(sc, byte(s))
		}
	}
	v := make([]float32, 32*len(sc))
	all := make([]byte, 0, 16*len(sc))
	for range 256 {
		all = append(all, blocks[:256]...)
	}
	MXFP4Decode(all, sc, v)
	for i, x := range v {
		b, s := all[i/2], sc[i/32]
		code := b & 15
		if i%2 == 1 {
			code = b >> 4
		}
		mag := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}[code&7]
		if code&8 != 0 {
			mag = -mag + 0 // code 8 is +0 here: MXFP4Values' -0 is Go's constant 0
		}
		want := float32(mag) * float32(math.Ldexp(1, int(s)-127))
		if math.Float32bits(x) != math.Float32bits(want) && !(x != x && want != want) {
			t.Fatalf("scale byte %d, code %#x: %g (%#x), want %g (%#x)", s, code, x, math.Float32bits(x), want, math.Float32bits(want))
		}
	}
}

// MXFP4Encode (sixteen lanes at a time where the CPU has them) gives the
// scalar body's block and scale byte: random magnitudes over a wide range,
// values on the rounding ties, zeros, subnormals, the largest finite, the
// infinities and a NaN.
func TestMXFP4EncodeMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-40, math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for n := range 20000 {
		v := make([]float32, 32)
		for i := range v {
			v[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(60)-30)))
		}
		switch n % 4 {
		case 1: // ties: half steps of a power-of-two scale
			for i := range v {
				v[i] = float32(float64(r.IntN(25)-12) * 0.25 * math.Pow(2, float64(n%9-4)))
			}
		case 2:
			v[r.IntN(32)] = special[r.IntN(len(special))]
		case 3:
			clear(v[:r.IntN(33)])
		}
		var got, want [16]byte
		gs, ws := MXFP4Encode(v, got[:]), mxfp4EncodeScalar(v, want[:])
		if gs != ws || got != want {
			t.Fatalf("block %d %v: scale %d codes %x, want %d %x", n, v, gs, got, ws, want)
		}
	}
}

// A column of blocks (stride 3) encoded and decoded at once is each block
// encoded and decoded alone, with NaN blocks (left to the scalar body) at
// the start, in the middle and at the end.
func TestMXFP4StridedMatchesBlocks(t *testing.T) {
	const n, stride = 9, 3
	r := rand.New(rand.NewPCG(7, 8))
	v := make([]float32, 32*n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(20)-10)))
	}
	for _, j := range []int{0, 4, 8} {
		v[32*j+5] = float32(math.NaN())
	}
	out, sc := make([]byte, 16*n*stride), make([]byte, n*stride)
	MXFP4EncodeStrided(v, n, out, sc, stride)
	got := make([]float32, 32*n)
	MXFP4DecodeStrided(out, sc, stride, n, got)
	for j := range n {
		var blk [16]byte
		s := mxfp4EncodeScalar(v[32*j:32*j+32], blk[:])
		i := j * stride
		if sc[i] != s || string(out[16*i:16*i+16]) != string(blk[:]) {
			t.Fatalf("block %d: scale %d codes %x, alone %d %x", j, sc[i], out[16*i:16*i+16], s, blk)
		}
		want := make([]float32, 32)
		MXFP4Decode(blk[:], []byte{s}, want)
		for k, x := range want {
			if y := got[32*j+k]; math.Float32bits(x) != math.Float32bits(y) {
				t.Fatalf("block %d value %d: %g, alone %g", j, k, y, x)
			}
		}
	}
}
