package quant

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
)

// fp8EncodeRef is the encoder as it was before the bit-arithmetic one
// (float64 rounding in the subnormal range): the semantics the fast
// encoders must keep.
func fp8EncodeRef(v float32) byte {
	if v != v {
		return 0x7f
	}
	bits := math.Float32bits(v)
	sign := byte(bits>>24) & 0x80
	bits &^= 1 << 31
	switch {
	case bits >= 0x43e00000:
		return sign | 0x7e
	case bits < 0x3c800000:
		return sign | byte(math.RoundToEven(float64(math.Float32frombits(bits))*512))
	}
	bits += 0x7ffff + (bits>>20)&1
	code := (int(bits>>23)-127+7)<<3 | int(bits>>20)&7
	return sign | byte(min(code, 0x7e))
}

// Every float32 whose top 20 bits (sign, exponent, eleven mantissa bits)
// are any of the 2^20 and whose low 12 bits are each pattern that sits at
// or beside a rounding boundary (E4M3's ties fall where the low 19 bits are
// zero: zeros, subnormals, normals, infinities and NaNs of both signs
// included) encodes to the same code by the scalar encoder, the vector one
// (through fp8EncodeRow), the whole-tile kernel (FP8EncodeTile's, as
// four rows, times 1 and 2^-3) and the reference. (Run once over all 2^32 inputs as well: it takes
// minutes, too long to keep.)
func TestFP8EncodeSweep(t *testing.T) {
	workers := runtime.GOMAXPROCS(0)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = encodeRange(w<<20/workers, (w+1)<<20/workers)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// encodeRange checks the inputs whose top 20 bits run over [lo, hi),
// first as they are, then each chunk of 40 times its own power of two.
func encodeRange(lo, hi int) error {
	lows := []uint32{0, 1, 2, 0x3ff, 0x400, 0x7fe, 0x7ff, 0x800, 0x801, 0xa5c, 0xffe, 0xfff}
	src, vec := make([]float32, len(lows)*1024), make([]byte, len(lows)*1024)
	ones, pow2 := make([]float32, len(src)/40+1), make([]float32, len(src)/40+1)
	for i := range ones {
		ones[i], pow2[i] = 1, float32(math.Ldexp(1, i%5-2))
	}
	for top := lo; top < hi; top += 1024 {
		src = src[:0]
		for k := top; k < min(hi, top+1024); k++ {
			for _, l := range lows {
				src = append(src, math.Float32frombits(uint32(k)<<12|l))
			}
		}
		for _, inv := range [][]float32{ones, pow2} {
			fp8EncodeRow(vec[:len(src)], src, 40, inv) // chunks of 40: vector and scalar parts
			for j, v := range src {
				v *= inv[j/40]
				want := fp8EncodeRef(v)
				if got := FP8Encode(v); got != want || vec[j] != want {
					return fmt.Errorf("bits %#08x: scalar %#02x, vector %#02x, reference %#02x", math.Float32bits(v), got, vec[j], want)
				}
			}
		}
		if err := encodeTileCheck(src, vec); err != nil {
			return err
		}
	}
	return nil
}

// encodeTileCheck encodes src as a tile of four rows by the tile kernel,
// where the CPU has it, and checks each code against the reference.
func encodeTileCheck(src []float32, codes []byte) error {
	cols := len(src) / 4 / 16 * 16
	for _, inv := range []float32{1, 0.125} {
		if !fp8EncodeTileVector(codes, len(src)/4, src, len(src)/4, 4, cols, inv) {
			return nil
		}
		for i := range 4 {
			for j := range cols {
				k := i*len(src)/4 + j
				if want := fp8EncodeRef(src[k] * inv); codes[k] != want {
					return fmt.Errorf("bits %#08x times %g: tile kernel %#02x, reference %#02x", math.Float32bits(src[k]), inv, codes[k], want)
				}
			}
		}
	}
	return nil
}

// Decoding scaled codes and the magnitude maximum give the same bits by
// the vector loops as by the table and a plain loop, NaN codes included.
func TestFP8VectorMatchesScalar(t *testing.T) {
	codes := make([]byte, 256*3+5) // every code, in three phases, and a tail
	for i := range codes {
		codes[i] = byte(i*7 + i/256)
	}
	scales := []float32{1, 3.5e-3, -2, 1e-40, float32(math.Inf(1)), 0.75}
	got := make([]float32, len(codes))
	fp8DecodeRow(got, codes, 150, scales) // chunks of 150: vector and scalar parts
	m := make([]uint32, len(scales))
	absMaxRow(got, 150, m)
	for c := range scales {
		var want uint32
		for i := 150 * c; i < min(len(codes), 150*(c+1)); i++ {
			w := FP8Value(codes[i]) * scales[c]
			if math.Float32bits(got[i]) != math.Float32bits(w) {
				t.Fatalf("code %#02x times %g: %g (%#x), want %g (%#x)", codes[i], scales[c], got[i], math.Float32bits(got[i]), w, math.Float32bits(w))
			}
			want = max(want, math.Float32bits(w)&^(1<<31))
		}
		if m[c] != want {
			t.Fatalf("chunk %d: largest magnitude bits %#x, want %#x", c, m[c], want)
		}
	}
}

// The whole-tile decoder and magnitude maximum give the table's and a
// plain loop's bits: every code, strided rows, scales that are tiny,
// negative, infinite and NaN.
func TestFP8TileKernels(t *testing.T) {
	const rows, cols, ld = 3, 256, 272
	codes := make([]byte, rows*ld)
	for i := range codes {
		codes[i] = byte(i*7 + i/256)
	}
	for _, s := range []float32{1, 3.5e-3, -2, 1e-40, float32(math.Inf(1)), float32(math.NaN())} {
		got := make([]float32, rows*ld)
		if !fp8DecodeTileVector(got, ld, codes, ld, rows, cols, s) {
			t.Skip("no AVX-512 here: the tile kernels are not used")
		}
		var want uint32
		for i := range rows {
			for j := range cols {
				w := FP8Value(codes[i*ld+j]) * s
				if g := got[i*ld+j]; math.Float32bits(g) != math.Float32bits(w) {
					t.Fatalf("code %#02x times %g: %#x, want %#x", codes[i*ld+j], s, math.Float32bits(g), math.Float32bits(w))
				}
				want = max(want, math.Float32bits(w)&^(1<<31))
			}
		}
		got[cols] = float32(math.Inf(1)) // between the rows: not the tile's
		if m, _ := absMaxTileVector(got, ld, rows, cols); m != want {
			t.Fatalf("scale %g: largest magnitude bits %#x, want %#x", s, m, want)
		}
	}
}
