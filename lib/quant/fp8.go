// Package quant decodes and encodes the block-quantised weight formats of
// released checkpoints (DeepSeek's FP8 blocks, compressed-tensors' packed
// INT4): the engine dequantises them on load, lib/export on merge.
package quant

import (
	"encoding/binary"
	"math"
)

// FP8 E4M3 ("e4m3fn", as DeepSeek V3 and Kimi K2 store their weights): a
// sign, four exponent bits with bias 7 and three mantissa bits; no
// infinities, S.1111.111 is NaN, the largest finite value is 448.
const FP8Max = 448

// FP8Values decodes every byte.
var FP8Values = fp8Table()

func fp8Table() (vals [256]float32) {
	for c := range 256 {
		e, m := (c>>3)&15, c&7
		var v float64
		switch {
		case e == 15 && m == 7:
			v = math.NaN()
		case e == 0:
			v = math.Ldexp(float64(m), -9) // subnormal: m/8 · 2^-6
		default:
			v = math.Ldexp(1+float64(m)/8, e-7)
		}
		if c&0x80 != 0 {
			v = -v
		}
		vals[c] = float32(v)
	}
	return vals
}

// FP8Encode rounds v to the nearest E4M3 value (ties to the even code),
// saturating at ±448; NaN stays NaN. Normal values round float32's
// mantissa to three bits; below 2^-6 the step is 2^-9.
func FP8Encode(v float32) byte {
	if v != v {
		return 0x7f
	}
	bits := math.Float32bits(v)
	sign := byte(bits>>24) & 0x80
	bits &^= 1 << 31
	switch {
	case bits >= 0x43e00000: // 448
		return sign | 0x7e
	case bits < 0x3c800000: // 2^-6: subnormal, q/8 · 2^-6 (q = 8 is 2^-6)
		return sign | byte(math.RoundToEven(float64(math.Float32frombits(bits))*512))
	}
	bits += 0x7ffff + (bits>>20)&1
	code := (int(bits>>23)-127+7)<<3 | int(bits>>20)&7
	return sign | byte(min(code, 0x7e))
}

// FP8Rows dequantises rows [lo, lo+n) of a cols-wide FP8 matrix: codes
// holds those rows, scales the whole matrix's F32 block scales (little
// endian, [ceil(rows/b0), ceil(cols/b1)]), dst n·cols values.
func FP8Rows(codes, scales []byte, cols int, b [2]int, lo, n int, dst []float32) {
	nbc := ceilDiv(cols, b[1])
	for r := range n {
		srow := ((lo + r) / b[0]) * nbc
		row, cs := dst[r*cols:(r+1)*cols], codes[r*cols:(r+1)*cols]
		for c0 := 0; c0 < cols; c0 += b[1] {
			s := math.Float32frombits(binary.LittleEndian.Uint32(scales[4*(srow+c0/b[1]):]))
			c1 := min(cols, c0+b[1])
			for j, c := range cs[c0:c1] {
				row[c0+j] = FP8Values[c] * s
			}
		}
	}
}

// FP8Quantize quantises rows [lo, lo+n) (lo a multiple of the block
// height): each block's scale is its largest magnitude over 448, and
// each value is value/scale rounded to E4M3.
func FP8Quantize(v []float32, cols int, b [2]int, lo, n int, dst, fresh []byte) {
	nbc := ceilDiv(cols, b[1])
	for r0 := 0; r0 < n; r0 += b[0] {
		r1 := min(n, r0+b[0])
		for c0 := 0; c0 < cols; c0 += b[1] {
			c1 := min(cols, c0+b[1])
			// Magnitudes compare as their bits (sign cleared).
			var amax uint32
			for r := r0; r < r1; r++ {
				for _, x := range v[r*cols+c0 : r*cols+c1] {
					amax = max(amax, math.Float32bits(x)&^(1<<31))
				}
			}
			s := math.Float32frombits(amax) / FP8Max
			if s == 0 {
				s = 1
			}
			binary.LittleEndian.PutUint32(fresh[4*(((lo+r0)/b[0])*nbc+c0/b[1]):], math.Float32bits(s))
			inv := 1 / s
			for r := r0; r < r1; r++ {
				row, out := v[r*cols+c0:r*cols+c1], dst[r*cols+c0:r*cols+c1]
				for j, x := range row {
					out[j] = FP8Encode(x * inv)
				}
			}
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
