//go:build goexperiment.simd && amd64

package jsonscan

import (
	"math/bits"
	"simd/archsimd"
	"unsafe"
)

// useVector: AVX2 compares 32 bytes at once; below vectorMin bytes the
// byte loop is as quick.
var useVector = archsimd.X86.AVX2()

const vectorMin = 4

// plainPrefixVector tests 32 bytes at a time: a byte is out when it is
// '"', '\\' or 0x7f, or below 0x20 as a signed byte, which takes in the
// bytes from 0x80 up (negative) with the control characters.
func plainPrefixVector(s string) int {
	b := unsafe.Slice((*int8)(unsafe.Pointer(unsafe.StringData(s))), len(s))
	quote := archsimd.BroadcastInt8x32('"')
	backslash := archsimd.BroadcastInt8x32('\\')
	del := archsimd.BroadcastInt8x32(0x7f)
	space := archsimd.BroadcastInt8x32(0x20)
	i := 0
	for ; len(b)-i >= 32; i += 32 {
		x := archsimd.LoadInt8x32Slice(b[i:])
		if out := x.Equal(quote).Or(x.Equal(backslash)).Or(x.Equal(del)).Or(space.Greater(x)).ToBits(); out != 0 {
			return i + bits.TrailingZeros32(out)
		}
	}
	if i == len(b) {
		return i
	}
	// The last, partial block: SlicePart fills in zeros, which are not s.
	x := archsimd.LoadInt8x32SlicePart(b[i:])
	out := x.Equal(quote).Or(x.Equal(backslash)).Or(x.Equal(del)).Or(space.Greater(x)).ToBits()
	if out &= 1<<(len(b)-i) - 1; out != 0 {
		return i + bits.TrailingZeros32(out)
	}
	return len(b)
}
