//go:build goexperiment.simd && amd64

package quant

import (
	"encoding/binary"
	"math"
	"simd/archsimd"
)

// mxfp4Down moves lane i's nibble (the low one in even lanes) to the bottom.
var mxfp4Down = [16]uint32{0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4}

// mxfp4DecodeVector is MXFP4Decode sixteen lanes at a time: a block's
// bytes spread two lanes each (int4Spread), each lane's nibble picks its
// value from the sixteen in one register, times the scale built from the
// byte in integer registers (no legacy-encoded scalar float moves beside
// the vector code, see int4ScaleVector).
func mxfp4DecodeVector(blocks, scales []byte, stride, n int, v []float32) bool {
	if !fp8Lanes() {
		return false
	}
	lo, hi := archsimd.LoadInt8x16(&int4Spread[0]), archsimd.LoadInt8x16(&int4Spread[1])
	down, low4 := archsimd.LoadUint32x16(&mxfp4Down), bcu(15)
	table := archsimd.LoadFloat32x16(&MXFP4Values)
	for j := range n {
		i := j * stride
		sv := bcu(mxfp4ScaleBits(scales[i])).AsFloat32x16()
		b := archsimd.LoadUint8x16Slice(blocks[16*i : 16*i+16])
		table.Permute(b.PermuteOrZero(lo).ExtendToUint32().ShiftRight(down).And(low4)).Mul(sv).StoreSlice(v[32*j : 32*j+16])
		table.Permute(b.PermuteOrZero(hi).ExtendToUint32().ShiftRight(down).And(low4)).Mul(sv).StoreSlice(v[32*j+16 : 32*j+32])
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// mxfp4EncodeVector is MXFP4EncodeStrided's scalar body sixteen lanes at
// a time from block from on (bfloat16 rounding as Float32ToBF16 does it,
// the largest magnitude in registers, e2m1 on every lane, codes packed two
// a byte as int4QuantizeVector packs them), and returns the first block
// it did not encode: n, or a block holding a NaN, left to the scalar body
// (whose max decides), or from where there is no vector unit.
func mxfp4EncodeVector(v []float32, n int, out, scales []byte, stride, from int) int {
	if !fp8Lanes() {
		return from
	}
	signBit, six, one, by28 := bcu(1<<31), bcu(math.Float32bits(6)).AsFloat32x16(), bcu(math.Float32bits(1)).AsFloat32x16(), archsimd.BroadcastUint64x8(28)
	j := from
	for ; j < n; j++ {
		a, b := bf16Round(archsimd.LoadFloat32x16Slice(v[32*j:32*j+16]).AsUint32x16()), bf16Round(archsimd.LoadFloat32x16Slice(v[32*j+16:32*j+32]).AsUint32x16())
		m := a.AndNot(signBit).Max(b.AndNot(signBit))
		h := m.GetHi().Max(m.GetLo())
		q := h.GetHi().Max(h.GetLo())
		amax := max(q.GetElem(0), q.GetElem(1), q.GetElem(2), q.GetElem(3))
		if amax > 0x7f800000 {
			break
		}
		exp := mxfp4Exp(bcu(amax).AsFloat32x16().Div(six).AsUint32x16().GetLo().GetLo().GetElem(0))
		var inv archsimd.Float32x16
		if exp != 0 {
			inv = one.Div(bcu(exp).AsFloat32x16())
		}
		i := j * stride
		for h, x := range [2]u32x16{a, b} {
			w := e2m1Vector(x.AsFloat32x16().Mul(inv).AsUint32x16()).AsUint64x8()
			binary.LittleEndian.PutUint64(out[16*i+8*h:], w.Or(w.ShiftRight(by28)).TruncateToUint8().AsUint64x2().GetElem(0))
		}
		scales[i] = byte(exp >> 23)
	}
	archsimd.ClearAVXUpperBits()
	return j
}

// bf16Round is each lane's float32 bits rounded to bfloat16 and back, as
// Float32ToBF16 then BF16ToFloat32 do it (a NaN kept quiet).
func bf16Round(u u32x16) u32x16 {
	by16 := bcu(16)
	r := u.Add(bcu(0x7fff)).Add(u.ShiftRight(by16).And(bcu(1)))
	r = u.Or(bcu(0x40<<16)).Merge(r, u.AndNot(bcu(1<<31)).Greater(bcu(0x7f800000)))
	return r.And(bcu(0xffff0000))
}

// e2m1Vector is e2m1 on each lane's bits.
func e2m1Vector(bits u32x16) u32x16 {
	exp, man := bits.ShiftRight(bcu(23)).And(bcu(0xff)), bits.And(bcu(0x7fffff))
	sub := bcu(0x400000).Or(man.ShiftRight(bcu(1))).ShiftRight(bcu(126).Sub(exp))
	man = sub.Merge(man, exp.Less(bcu(127)))
	exp = exp.Max(bcu(126)).Sub(bcu(126))
	code := exp.ShiftLeft(bcu(2)).Or(man.ShiftRight(bcu(21))).Add(bcu(1)).ShiftRight(bcu(1)).Min(bcu(7))
	return bits.ShiftRight(bcu(28)).And(bcu(8)).Or(code)
}
