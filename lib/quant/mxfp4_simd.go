//go:build goexperiment.simd && amd64

package quant

import "simd/archsimd"

// mxfp4Down moves lane i's nibble (the low one in even lanes) to the bottom.
var mxfp4Down = [16]uint32{0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4}

// mxfp4DecodeVector is MXFP4Decode sixteen lanes at a time: a block's
// bytes spread two lanes each (int4Spread), each lane's nibble picks its
// value from the sixteen in one register, times the scale built from the
// byte in integer registers (no legacy-encoded scalar float moves beside
// the vector code, see int4ScaleVector).
func mxfp4DecodeVector(blocks, scales []byte, v []float32) bool {
	if !fp8Lanes {
		return false
	}
	lo, hi := archsimd.LoadInt8x16(&int4Spread[0]), archsimd.LoadInt8x16(&int4Spread[1])
	down, low4 := archsimd.LoadUint32x16(&mxfp4Down), bcu(15)
	table := archsimd.LoadFloat32x16(&MXFP4Values)
	for i, sc := range scales {
		sv := bcu(mxfp4ScaleBits(sc)).AsFloat32x16()
		b := archsimd.LoadUint8x16Slice(blocks[16*i : 16*i+16])
		table.Permute(b.PermuteOrZero(lo).ExtendToUint32().ShiftRight(down).And(low4)).Mul(sv).StoreSlice(v[32*i : 32*i+16])
		table.Permute(b.PermuteOrZero(hi).ExtendToUint32().ShiftRight(down).And(low4)).Mul(sv).StoreSlice(v[32*i+16 : 32*i+32])
	}
	archsimd.ClearAVXUpperBits()
	return true
}
