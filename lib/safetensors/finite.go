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
	for i := 0; i+width <= len(b); i += width {
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
