package zstd

import "encoding/binary"

// readLiterals decodes a block's literals section (RFC 8878 3.1.1.3.1)
// into d.lits and returns the bytes it used. maxLen bounds the literals.
func (d *decoder) readLiterals(in []byte, maxLen int) (int, error) {
	if len(in) == 0 {
		return 0, corrupt("empty compressed block")
	}
	kind, format := in[0]&3, in[0]>>2&3
	if kind < 2 {
		return d.rawLiterals(in, kind, format, maxLen)
	}
	hlen := []int{3, 3, 4, 5}[format]
	if len(in) < hlen {
		return 0, corrupt("literals header past the block")
	}
	h := leUint(in[:hlen]) >> 4
	sizeBits := []uint{10, 10, 14, 18}[format]
	regen, comp := int(h&(1<<sizeBits-1)), int(h>>sizeBits&(1<<sizeBits-1))
	if regen > maxLen || hlen+comp > len(in) {
		return 0, corrupt("literals sizes %d/%d", regen, comp)
	}
	if err := d.spend(workPerLiteral * regen); err != nil {
		return 0, err
	}
	src := in[hlen : hlen+comp]
	if kind == 2 {
		n, err := readHuffTable(&d.ownHuff, src, &d.huffMem)
		if err != nil {
			return 0, err
		}
		if err := d.spend(workPerState * (len(d.ownHuff.entries) + huffWeightWork(src[0]))); err != nil {
			return 0, err
		}
		d.huff, src = &d.ownHuff, src[n:]
	} else if d.huff == nil {
		return 0, corrupt("treeless literals without an earlier Huffman table")
	}
	d.lits = grow(d.lits, regen)
	if format == 0 {
		return hlen + comp, d.huff.decode(d.lits, src)
	}
	return hlen + comp, d.fourStreams(src)
}

// rawLiterals handles raw (kind 0) and RLE (kind 1) literals.
func (d *decoder) rawLiterals(in []byte, kind, format uint8, maxLen int) (int, error) {
	var n, hlen int
	switch format {
	case 0, 2:
		n, hlen = int(in[0]>>3), 1
	case 1:
		if len(in) < 2 {
			return 0, corrupt("literals header past the block")
		}
		n, hlen = int(in[0]>>4)|int(in[1])<<4, 2
	default:
		if len(in) < 3 {
			return 0, corrupt("literals header past the block")
		}
		n, hlen = int(in[0]>>4)|int(in[1])<<4|int(in[2])<<12, 3
	}
	if n > maxLen {
		return 0, corrupt("literals longer than a block")
	}
	if err := d.spend(workPerLiteral * n); err != nil {
		return 0, err
	}
	d.lits = grow(d.lits, n)
	if kind == 1 {
		if len(in) < hlen+1 {
			return 0, corrupt("RLE literals past the block")
		}
		for i := range d.lits {
			d.lits[i] = in[hlen]
		}
		return hlen + 1, nil
	}
	if len(in) < hlen+n {
		return 0, corrupt("raw literals past the block")
	}
	copy(d.lits, in[hlen:hlen+n])
	return hlen + n, nil
}

// fourStreams decodes literals split over four Huffman streams behind a
// jump table of three little-endian sizes.
func (d *decoder) fourStreams(src []byte) error {
	if len(src) < 6 {
		return corrupt("literals jump table past the block")
	}
	s1, s2, s3 := int(binary.LittleEndian.Uint16(src)), int(binary.LittleEndian.Uint16(src[2:])), int(binary.LittleEndian.Uint16(src[4:]))
	src = src[6:]
	if s1+s2+s3 > len(src) {
		return corrupt("literals streams past the block")
	}
	ends := [4]int{s1, s1 + s2, s1 + s2 + s3, len(src)}
	seg := (len(d.lits) + 3) / 4
	if 3*seg > len(d.lits) {
		return corrupt("too few literals for four streams")
	}
	start := 0
	for i, end := range ends {
		out := d.lits[min(i*seg, len(d.lits)):min((i+1)*seg, len(d.lits))]
		if i == 3 {
			out = d.lits[3*seg:]
		}
		if err := d.huff.decode(out, src[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// grow returns b resized to n, reusing its array when it can.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}
