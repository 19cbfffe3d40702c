//go:build goexperiment.simd && amd64

package quant

import "simd/archsimd"

// Vector twins of fp8.go's loops, sixteen lanes (AVX-512): each lane does
// the scalar body's operations, so the codes and values are the same bit
// for bit (TestFP8EncodeSweep, TestFP8VectorMatchesScalar); tails go to
// the scalar body. Shifts take their counts from a vector (ShiftRight, not
// ShiftAllRight): the constant-count form moves the count with a legacy
// SSE instruction, which with the upper registers in use costs tens of
// cycles each time (it made the loop slower than the scalar one).

// fp8Lanes reports AVX-512, asked at each call rather than kept in a
// package variable, which would give quant init code that every start of
// tinker runs (cmd/tinker/app's TestOwnInitCodeStaysSmall).
func fp8Lanes() bool { return archsimd.X86.AVX512() }

type u32x16 = archsimd.Uint32x16

func bcu(v uint32) u32x16 { return archsimd.BroadcastUint32x16(v) }

// fp8EncodeVector encodes each chunk's multiple of 16 (fp8EncodeRow)
// and says whether it did.
func fp8EncodeVector(dst []byte, src []float32, b int, inv []float32) bool {
	if !fp8Lanes() {
		return false
	}
	nan, sat, sub := bcu(0x7f800000), bcu(fp8SatBits), bcu(fp8SubBits)
	by20, by24 := bcu(20), bcu(24)
	signBit, signByte, half, one, rebias := bcu(1<<31), bcu(0x80), bcu(0x7ffff), bcu(1), bcu(fp8Rebias)
	subAdd, subBias, satCode, nanCode := archsimd.BroadcastFloat32x16(1<<14), bcu(fp8SubBias), bcu(0x7e), bcu(0x7f)
	for c0 := 0; c0 < len(src); c0 += b {
		iv := archsimd.BroadcastFloat32x16(inv[c0/b])
		for j := c0; j < vecEnd(c0, min(len(src), c0+b), true); j += 16 {
			bits := archsimd.LoadFloat32x16Slice(src[j : j+16]).Mul(iv).AsUint32x16()
			a := bits.AndNot(signBit)
			sign := bits.ShiftRight(by24).And(signByte)
			// Normal: round the mantissa to three bits, exponent and
			// mantissa above bit 20, rebiased.
			code := a.Add(half).Add(a.ShiftRight(by20).And(one)).ShiftRight(by20).Sub(rebias)
			subc := a.AsFloat32x16().Add(subAdd).AsUint32x16().Sub(subBias)
			code = subc.Merge(code, a.Less(sub)) // x.Merge(y, m): x where m, else y
			code = satCode.Merge(code, a.GreaterEqual(sat)).Or(sign)
			code = nanCode.Merge(code, a.Greater(nan))
			code.TruncateToUint8().Store((*[16]uint8)(dst[j : j+16]))
		}
	}
	archsimd.ClearAVXUpperBits() // the scalar code after runs at full speed
	return true
}

// fp8DecodeVector decodes each chunk's multiple of 16 (fp8DecodeRow): a
// normal code's exponent and mantissa shift into float32's with the bias
// moved, a subnormal one is its mantissa (converted) times 2^-9.
func fp8DecodeVector(dst []float32, src []byte, b int, s []float32) bool {
	if !fp8Lanes() {
		return false
	}
	tiny := archsimd.BroadcastFloat32x16(1.0 / 512)
	by20, by24 := bcu(20), bcu(24)
	low7, signByte, rebias, eight, nanCode, nanBits := bcu(0x7f), bcu(0x80), bcu(fp8Rebias<<20), bcu(8), bcu(0x7f), bcu(0x7fc00000)
	for c0 := 0; c0 < len(src); c0 += b {
		sv := archsimd.BroadcastFloat32x16(s[c0/b])
		for j := c0; j < vecEnd(c0, min(len(src), c0+b), true); j += 16 {
			c := archsimd.LoadUint8x16((*[16]uint8)(src[j : j+16])).ExtendToUint32()
			mag, sign := c.And(low7), c.And(signByte).ShiftLeft(by24)
			v := mag.ShiftLeft(by20).Add(rebias)
			sub := mag.AsInt32x16().ConvertToFloat32().Mul(tiny).AsUint32x16()
			v = sub.Merge(v, mag.Less(eight))
			v = nanBits.Merge(v, mag.Equal(nanCode)).Or(sign)
			v.AsFloat32x16().Mul(sv).StoreSlice(dst[j : j+16])
		}
	}
	archsimd.ClearAVXUpperBits()
	return true
}

// absMaxVector is absMaxRow over each chunk's multiple of 16. The lanes
// are reduced in registers: a local array would be zeroed with legacy SSE
// moves, which cost as much as the shifts above.
func absMaxVector(src []float32, b int, m []uint32) bool {
	if !fp8Lanes() {
		return false
	}
	signBit := bcu(1 << 31)
	for c0 := 0; c0 < len(src); c0 += b {
		var acc u32x16
		for j := c0; j < vecEnd(c0, min(len(src), c0+b), true); j += 16 {
			acc = acc.Max(archsimd.LoadFloat32x16Slice(src[j : j+16]).AsUint32x16().AndNot(signBit))
		}
		h := acc.GetHi().Max(acc.GetLo())
		q := h.GetHi().Max(h.GetLo())
		m[c0/b] = max(m[c0/b], q.GetElem(0), q.GetElem(1), q.GetElem(2), q.GetElem(3))
	}
	archsimd.ClearAVXUpperBits()
	return true
}
