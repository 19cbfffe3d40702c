//go:build goexperiment.simd && amd64

package jsonscan

import (
	"math/bits"
	"simd/archsimd"
	"unsafe"
)

// useVector: AVX2 compares 32 bytes at once. Shorter strings take the
// byte loop: a partial load (LoadInt8x32SlicePart) cost more than it. A
// function, not a package variable: that would be init code every start
// of tinker runs (cmd/tinker/app's TestOwnInitCodeStaysSmall).
func useVector() bool { return archsimd.X86.AVX2() }

const vectorMin = 32

// plainPrefixVector tests 32 bytes at a time (len(s) >= 32), the last
// block overlapping the one before it: a byte is out when it is '"',
// '\\' or 0x7f, or below 0x20 as a signed byte, which takes in the bytes
// from 0x80 up (negative) with the control characters. The upper halves
// of the vector registers are cleared before returning: Go's SSE code
// (memmove, IndexByte) that follows runs several times slower while they
// are dirty.
func plainPrefixVector(s string) int {
	b := unsafe.Slice((*int8)(unsafe.Pointer(unsafe.StringData(s))), len(s))
	quote := archsimd.BroadcastInt8x32('"')
	backslash := archsimd.BroadcastInt8x32('\\')
	del := archsimd.BroadcastInt8x32(0x7f)
	space := archsimd.BroadcastInt8x32(0x20)
	n := len(b)
	for i := 0; i < len(b); i += 32 {
		start := min(i, len(b)-32) // the last block ends at len(b)
		x := archsimd.LoadInt8x32Slice(b[start:])
		out := x.Equal(quote).Or(x.Equal(backslash)).Or(x.Equal(del)).Or(space.Greater(x)).ToBits()
		if out >>= i - start; out != 0 { // bytes before i were tested already
			n = i + bits.TrailingZeros32(out)
			break
		}
	}
	archsimd.ClearAVXUpperBits()
	return n
}
