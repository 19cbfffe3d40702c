//go:build goexperiment.simd && amd64

package export

import "simd/archsimd"

// Vector twins of fp8.go's loops, sixteen lanes (AVX-512): each lane does
// the scalar body's operations, so the codes and values are the same bit
// for bit (TestFP8EncodeSweep, TestFP8VectorMatchesScalar); tails go to
// the scalar body. Shifts take their counts from a vector (ShiftRight, not
// ShiftAllRight): the constant-count form moves the count with a legacy
// SSE instruction, which with the upper registers in use costs tens of
// cycles each time (it made the loop slower than the scalar one).

var fp8Lanes = archsimd.X86.AVX512()

type u32x16 = archsimd.Uint32x16

func bcu(v uint32) u32x16 { return archsimd.BroadcastUint32x16(v) }

// fp8EncodeVector encodes the first multiple of 16 of src and says how
// many it did.
func fp8EncodeVector(dst []byte, src []float32, inv float32) int {
	if !fp8Lanes {
		return 0
	}
	n := len(src) &^ 15
	iv := archsimd.BroadcastFloat32x16(inv)
	nan, sat, sub := bcu(0x7f800000), bcu(fp8SatBits), bcu(fp8SubBits)
	by20, by24 := bcu(20), bcu(24)
	signBit, signByte, half, one, rebias := bcu(1<<31), bcu(0x80), bcu(0x7ffff), bcu(1), bcu(fp8Rebias)
	subAdd, subBias, satCode, nanCode := archsimd.BroadcastFloat32x16(1<<14), bcu(fp8SubBias), bcu(0x7e), bcu(0x7f)
	for j := 0; j < n; j += 16 {
		bits := archsimd.LoadFloat32x16Slice(src[j : j+16]).Mul(iv).AsUint32x16()
		a := bits.AndNot(signBit)
		sign := bits.ShiftRight(by24).And(signByte)
		// Normal: round the mantissa to three bits, exponent and mantissa
		// above bit 20, rebiased.
		code := a.Add(half).Add(a.ShiftRight(by20).And(one)).ShiftRight(by20).Sub(rebias)
		subc := a.AsFloat32x16().Add(subAdd).AsUint32x16().Sub(subBias)
		code = subc.Merge(code, a.Less(sub)) // x.Merge(y, m): x where m, else y
		code = satCode.Merge(code, a.GreaterEqual(sat)).Or(sign)
		code = nanCode.Merge(code, a.Greater(nan))
		code.TruncateToUint8().Store((*[16]uint8)(dst[j : j+16]))
	}
	archsimd.ClearAVXUpperBits() // the scalar code after runs at full speed
	return n
}

// fp8DecodeVector decodes the first multiple of 16 of src, scaled by s:
// a normal code's exponent and mantissa shift into float32's with the
// bias moved, a subnormal one is its mantissa (converted) times 2^-9.
func fp8DecodeVector(dst []float32, src []byte, s float32) int {
	if !fp8Lanes {
		return 0
	}
	n := len(src) &^ 15
	sv, tiny := archsimd.BroadcastFloat32x16(s), archsimd.BroadcastFloat32x16(1.0/512)
	by20, by24 := bcu(20), bcu(24)
	low7, signByte, rebias, eight, nanCode, nanBits := bcu(0x7f), bcu(0x80), bcu(fp8Rebias<<20), bcu(8), bcu(0x7f), bcu(0x7fc00000)
	for j := 0; j < n; j += 16 {
		c := archsimd.LoadUint8x16((*[16]uint8)(src[j : j+16])).ExtendToUint32()
		mag, sign := c.And(low7), c.And(signByte).ShiftLeft(by24)
		v := mag.ShiftLeft(by20).Add(rebias)
		sub := mag.AsInt32x16().ConvertToFloat32().Mul(tiny).AsUint32x16()
		v = sub.Merge(v, mag.Less(eight))
		v = nanBits.Merge(v, mag.Equal(nanCode)).Or(sign)
		v.AsFloat32x16().Mul(sv).StoreSlice(dst[j : j+16])
	}
	archsimd.ClearAVXUpperBits()
	return n
}

// absMaxVector is absMaxBits over the first multiple of 16 of src, and
// how many that was.
func absMaxVector(src []float32) (uint32, int) {
	if !fp8Lanes {
		return 0, 0
	}
	n := len(src) &^ 15
	var m u32x16
	signBit := bcu(1 << 31)
	for j := 0; j < n; j += 16 {
		m = m.Max(archsimd.LoadFloat32x16Slice(src[j : j+16]).AsUint32x16().AndNot(signBit))
	}
	var lanes [16]uint32
	m.Store(&lanes)
	archsimd.ClearAVXUpperBits()
	var r uint32
	for _, x := range lanes {
		r = max(r, x)
	}
	return r, n
}
