package zstd

import (
	"encoding/binary"
	"slices"
)

// appendLiterals writes the literals section: RLE for a run, Huffman
// when that is smaller, else raw.
func appendLiterals(dst, lits []byte) []byte {
	if isRun(lits) && len(lits) < 1<<20 {
		return append(appendRawHeader(dst, 1, len(lits)), lits[0])
	}
	if len(lits) >= 64 {
		if h, ok := appendHuffLiterals(dst, lits); ok && len(h)-len(dst) < len(lits) {
			return h
		}
	}
	return append(appendRawHeader(dst, 0, len(lits)), lits...)
}

// appendRawHeader writes the header of raw (kind 0) or RLE (kind 1)
// literals of size n.
func appendRawHeader(dst []byte, kind byte, n int) []byte {
	switch {
	case n < 32:
		return append(dst, kind|byte(n<<3))
	case n < 4096:
		return append(dst, kind|1<<2|byte(n<<4), byte(n>>4))
	}
	return append(dst, kind|3<<2|byte(n<<4), byte(n>>4), byte(n>>12))
}

// appendHuffLiterals writes Huffman-compressed literals: the tree
// description, then one stream for short literals or four behind a jump
// table. ok is false when they cannot be coded so.
func appendHuffLiterals(dst, lits []byte) ([]byte, bool) {
	var counts [256]int
	for _, c := range lits {
		counts[c]++
	}
	lengths := huffLengths(&counts)
	log := slices.Max(lengths[:])
	top := 255
	for lengths[top] == 0 {
		top--
	}
	weights := make([]uint8, top)
	for s := range weights {
		if lengths[s] > 0 {
			weights[s] = log + 1 - lengths[s]
		}
	}
	body, ok := appendHuffWeights(nil, weights)
	if !ok {
		return nil, false
	}
	codes := huffCodes(&lengths, log)
	four := len(lits) > 1023
	if !four {
		body = appendHuffStream(body, lits, &codes)
	} else if body, ok = appendFourStreams(body, lits, &codes); !ok {
		return nil, false
	}
	return appendHuffHeader(dst, four, len(lits), len(body), body)
}

// appendFourStreams splits lits in four Huffman streams behind a jump
// table of the first three's sizes.
func appendFourStreams(dst, lits []byte, codes *[256]huffCode) ([]byte, bool) {
	seg := (len(lits) + 3) / 4
	jump := len(dst)
	dst = append(dst, make([]byte, 6)...)
	for i := 0; i < 4; i++ {
		before := len(dst)
		dst = appendHuffStream(dst, lits[i*seg:min((i+1)*seg, len(lits))], codes)
		if i < 3 {
			if len(dst)-before > 0xFFFF {
				return nil, false
			}
			binary.LittleEndian.PutUint16(dst[jump+2*i:], uint16(len(dst)-before))
		}
	}
	return dst, true
}

// appendHuffHeader writes the compressed literals header (sizes in 10,
// 14 or 18 bits each) and the body.
func appendHuffHeader(dst []byte, four bool, regen, comp int, body []byte) ([]byte, bool) {
	format, nbytes, sizeBits := uint64(0), 3, uint(10)
	switch n := max(regen, comp); {
	case !four && n < 1024:
	case four && n < 1024:
		format = 1
	case n < 1<<14:
		format, nbytes, sizeBits = 2, 4, 14
	case n < 1<<18:
		format, nbytes, sizeBits = 3, 5, 18
	default:
		return nil, false
	}
	if !four && format != 0 {
		return nil, false
	}
	h := 2 | format<<2 | uint64(regen)<<4 | uint64(comp)<<(4+sizeBits)
	dst = binary.LittleEndian.AppendUint64(dst, h)[:len(dst)+nbytes]
	return append(dst, body...), true
}
