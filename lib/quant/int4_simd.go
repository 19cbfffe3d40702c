//go:build goexperiment.simd && amd64

package quant

import (
	"encoding/binary"
	"math"
	"simd/archsimd"
)

// int4Spread puts byte i/2 of sixteen in lane i (VPSHUFB indices): the
// low half's bytes, then the high half's.
var int4Spread = [2][16]int8{{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7}, {8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15}}

// int4Up moves lane i's nibble (the low one in even lanes) to the top.
var int4Up = [16]uint32{28, 24, 28, 24, 28, 24, 28, 24, 28, 24, 28, 24, 28, 24, 28, 24}

// int4RowVector is Int4Row for groups of a multiple of 32 that tile dst,
// and says whether it did: sixteen bytes give 32 lanes, each lane's nibble
// shifted to the top and arithmetically back, converted, times the scale.
func int4RowVector(packed, scales []byte, group int, dst []float32) bool {
	if !fp8Lanes() || group%32 != 0 || len(dst)%group != 0 {
		return false
	}
	lo, hi := archsimd.LoadInt8x16(&int4Spread[0]), archsimd.LoadInt8x16(&int4Spread[1])
	up, down := archsimd.LoadUint32x16(&int4Up), archsimd.BroadcastInt32x16(28)
	for g := 0; g < len(dst); g += group {
		sv := bcu(uint32(binary.LittleEndian.Uint16(scales[2*(g/group):])) << 16).AsFloat32x16() // built in integer registers: see int4ScaleVector
		for j := g; j < g+group; j += 32 {
			b := archsimd.LoadUint8x16Slice(packed[j/2 : j/2+16])
			b.PermuteOrZero(lo).ExtendToUint32().ShiftLeft(up).AsInt32x16().ShiftRight(down).ConvertToFloat32().Mul(sv).StoreSlice(dst[j : j+16])
			b.PermuteOrZero(hi).ExtendToUint32().ShiftLeft(up).AsInt32x16().ShiftRight(down).ConvertToFloat32().Mul(sv).StoreSlice(dst[j+16 : j+32])
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// int4QuantizeVector is Int4Quantize for groups of a multiple of 16 that
// tile src, and says whether it did: each group's largest magnitude is
// taken in registers, its scale made there (int4ScaleVector), and each
// sixteen values are divided, rounded to even, clamped, and packed two a
// byte (a lane pair's high code moved down beside its low one in 64 bits,
// then the low bytes kept).
func int4QuantizeVector(src []float32, group int, packed, scales []byte) bool {
	if !fp8Lanes() || group%16 != 0 || len(src)%group != 0 {
		return false
	}
	signBit, low4, by28 := bcu(1<<31), bcu(15), archsimd.BroadcastUint64x8(28)
	lo, hi := bcu(math.Float32bits(-8)).AsFloat32x16(), bcu(math.Float32bits(7)).AsFloat32x16()
	for g := 0; g < len(src); g += group {
		var acc u32x16
		for j := g; j < g+group; j += 16 {
			acc = acc.Max(archsimd.LoadFloat32x16Slice(src[j : j+16]).AsUint32x16().AndNot(signBit))
		}
		h := acc.GetHi().Max(acc.GetLo())
		q := h.GetHi().Max(h.GetLo())
		sb := int4ScaleVector(max(q.GetElem(0), q.GetElem(1), q.GetElem(2), q.GetElem(3)))
		binary.LittleEndian.PutUint16(scales[2*(g/group):], sb)
		if sb == 0 || sb > 0x7f80 { // the scale is not positive (zero or NaN): int4Round's zeros
			for j := g / 2; j < (g+group)/2; j++ {
				packed[j] = 0
			}
			continue
		}
		sv := bcu(uint32(sb) << 16).AsFloat32x16()
		for j := g; j < g+group; j += 16 {
			c := archsimd.LoadFloat32x16Slice(src[j : j+16]).Div(sv).RoundToEvenScaled(0).Max(lo).Min(hi).ConvertToInt32()
			w := c.AsUint32x16().And(low4).AsUint64x8()
			binary.LittleEndian.PutUint64(packed[j/2:], w.Or(w.ShiftRight(by28)).TruncateToUint8().AsUint64x2().GetElem(0))
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// int4ScaleVector is int4Scale (a largest magnitude's bits, of a value
// that is not negative) done in vector registers: with the upper halves
// in use, the scalar float division and moves would each pay for the
// switch to the legacy encoding (see fp8_simd.go).
func int4ScaleVector(amax uint32) uint16 {
	u := bcu(amax).AsFloat32x16().Div(bcu(math.Float32bits(7)).AsFloat32x16()).AsUint32x16()
	r := u.Add(bcu(0x7fff)).Add(u.ShiftRight(bcu(16)).And(bcu(1)))
	r = u.Or(bcu(0x40<<16)).Merge(r, u.Greater(bcu(0x7f800000))) // NaN: quiet, as Float32ToBF16 keeps it
	return uint16(r.ShiftRight(bcu(16)).GetLo().GetLo().GetElem(0))
}
