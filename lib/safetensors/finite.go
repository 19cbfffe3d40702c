package safetensors

import "encoding/binary"

// NonFinite returns the index of the first NaN or infinite value of a
// float tensor, or -1 if there is none (or the dtype is not a float). It
// reads the exponent bits in place, without converting.
func (t *Tensor) NonFinite() int64 {
	var width int
	var mask uint64
	switch t.DType {
	case F32:
		width, mask = 4, 0x7f800000
	case BF16:
		width, mask = 2, 0x7f80
	case F16:
		width, mask = 2, 0x7c00
	case F64:
		width, mask = 8, 0x7ff0000000000000
	default:
		return -1
	}
	b := t.Data
	i := skipFinite(b, width, mask)
	for ; i+width <= len(b); i += width {
		var v uint64
		switch width {
		case 2:
			v = uint64(binary.LittleEndian.Uint16(b[i:]))
		case 4:
			v = uint64(binary.LittleEndian.Uint32(b[i:]))
		default:
			v = binary.LittleEndian.Uint64(b[i:])
		}
		if v&mask == mask {
			return int64(i / width)
		}
	}
	return -1
}

// skipFinite returns where the per-value scan must start: the first 32-byte
// chunk of b holding a value whose exponent bits are all set, or where the
// whole chunks end. Four words at a time, each lane tested at once: with
// the sign bit cleared, a lane's exponent bits plus their lowest bit reach
// the sign bit only when they are all set, and never carry into the next
// lane. (A tensor of adapter weights is scanned in full before a merge.)
func skipFinite(b []byte, width int, mask uint64) int {
	var m, low uint64
	for k := 0; k < 8; k += width {
		m |= mask << (8 * k)
		low |= (mask & -mask) << (8 * k)
	}
	top := m + low
	i := 0
	for ; i+32 <= len(b); i += 32 {
		le := binary.LittleEndian
		x0, x1, x2, x3 := le.Uint64(b[i:]), le.Uint64(b[i+8:]), le.Uint64(b[i+16:]), le.Uint64(b[i+24:])
		if (((x0&m)+low)|((x1&m)+low)|((x2&m)+low)|((x3&m)+low))&top != 0 {
			break
		}
	}
	return i
}
