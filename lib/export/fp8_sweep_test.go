package export

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
// (through fp8EncodeScaled with inv 1, which leaves every input as it is)
// and the reference. (Run once over all 2^32 inputs as well: it takes
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

// encodeRange checks the inputs whose top 20 bits run over [lo, hi).
func encodeRange(lo, hi int) error {
	lows := []uint32{0, 1, 2, 0x3ff, 0x400, 0x7fe, 0x7ff, 0x800, 0x801, 0xa5c, 0xffe, 0xfff}
	src, vec := make([]float32, len(lows)*1024), make([]byte, len(lows)*1024)
	for top := lo; top < hi; top += 1024 {
		src = src[:0]
		for k := top; k < min(hi, top+1024); k++ {
			for _, l := range lows {
				src = append(src, math.Float32frombits(uint32(k)<<12|l))
			}
		}
		fp8EncodeScaled(vec[:len(src)], src, 1)
		for j, v := range src {
			want := fp8EncodeRef(v)
			if got := fp8Encode(v); got != want || vec[j] != want {
				return fmt.Errorf("bits %#08x: scalar %#02x, vector %#02x, reference %#02x", math.Float32bits(v), got, vec[j], want)
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
	for _, s := range []float32{1, 3.5e-3, -2, 1e-40, float32(math.Inf(1))} {
		got := make([]float32, len(codes))
		fp8DecodeScaled(got, codes, s)
		for i, c := range codes {
			if want := fp8Values[c] * s; math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("code %#02x times %g: %g (%#x), want %g (%#x)", c, s, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
			}
		}
		var want uint32
		for _, v := range got {
			want = max(want, math.Float32bits(v)&^(1<<31))
		}
		if m := absMaxBits(got); m != want {
			t.Fatalf("scale %g: absMaxBits %#x, want %#x", s, m, want)
		}
	}
}
