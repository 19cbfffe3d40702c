package zstd

import (
	"encoding/binary"
	"math/bits"
)

// encWindowLog is the window the encoder's matches stay within; content
// up to this size goes in one segment, whose window is the content size.
const encWindowLog = 23

// Encode appends to dst one frame holding src, with its content size and
// checksum: hash-chained LZ matches coded as sequences with the
// predefined FSE tables, literals raw or Huffman-coded, each block stored
// raw when coding would not make it smaller. Safe for concurrent use.
func Encode(dst, src []byte) []byte {
	dst = appendFrameHeader(dst, len(src))
	m := newMatcher(src)
	for start := 0; ; start += maxBlockSize {
		end := min(start+maxBlockSize, len(src))
		dst = m.appendBlock(dst, start, end, end == len(src))
		if end == len(src) {
			break
		}
	}
	return binary.LittleEndian.AppendUint32(dst, uint32(xxh64(src)))
}

// appendFrameHeader writes the magic and a header with the content size
// and a checksum flag: one segment when the content fits the window.
func appendFrameHeader(dst []byte, n int) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, frameMagic)
	single := n <= 1<<encWindowLog
	fhd := byte(4) // checksum
	if single {
		fhd |= 0x20
	}
	var fcs []byte
	switch {
	case single && n < 256:
		fcs = []byte{byte(n)}
	case n >= 256 && n < 1<<16+256:
		fhd |= 1 << 6
		fcs = binary.LittleEndian.AppendUint16(nil, uint16(n-256))
	case uint64(n) < 1<<32:
		fhd |= 2 << 6
		fcs = binary.LittleEndian.AppendUint32(nil, uint32(n))
	default:
		fhd |= 3 << 6
		fcs = binary.LittleEndian.AppendUint64(nil, uint64(n))
	}
	dst = append(dst, fhd)
	if !single {
		dst = append(dst, (encWindowLog-10)<<3)
	}
	return append(dst, fcs...)
}

// appendBlockHeader writes a block header: last flag, type, size.
func appendBlockHeader(dst []byte, last bool, kind, size int) []byte {
	h := uint32(size)<<3 | uint32(kind)<<1
	if last {
		h |= 1
	}
	return append(dst, byte(h), byte(h>>8), byte(h>>16))
}

// seq is one sequence: literals, then a match of mlen at offset off.
type seq struct {
	llen, mlen uint32
	offBase    uint32 // offset value as coded: repeat 1-3 or offset+3
}

// appendCompressedBlock codes lits and seqs as a compressed block, or as
// a raw block of raw when that is no larger.
func appendCompressedBlock(dst, raw, lits []byte, seqs []seq, last bool) []byte {
	body := appendLiterals(nil, lits)
	body = appendSequences(body, seqs)
	if len(body) >= len(raw) {
		if isRun(raw) {
			return append(appendBlockHeader(dst, last, 1, len(raw)), raw[0])
		}
		return append(appendBlockHeader(dst, last, 0, len(raw)), raw...)
	}
	return append(appendBlockHeader(dst, last, 2, len(body)), body...)
}

// isRun reports whether b is one byte repeated (and not empty).
func isRun(b []byte) bool {
	for _, c := range b {
		if c != b[0] {
			return false
		}
	}
	return len(b) > 1
}

// appendSequences writes the sequences section with the predefined
// tables: the count, the modes byte and the backward bitstream, last
// sequence first.
func appendSequences(dst []byte, seqs []seq) []byte {
	n := len(seqs)
	switch {
	case n < 128:
		dst = append(dst, byte(n))
	case n < 0x7F00:
		dst = append(dst, byte(n>>8+128), byte(n))
	default:
		dst = append(dst, 255, byte(n-0x7F00), byte((n-0x7F00)>>8))
	}
	if n == 0 {
		return dst
	}
	dst = append(dst, 0) // predefined literal-length, offset and match-length tables
	t := encTabs.Get()
	w := bitWriter{out: dst}
	var ll, of, ml fseEncoder
	for i := n - 1; i >= 0; i-- {
		s := seqs[i]
		llc, mlc := t.litLenCode(s.llen), t.matchLenCode(s.mlen-3)
		ofc := uint8(bits.Len32(s.offBase) - 1)
		if i == n-1 {
			ml.start(t.fse[2], mlc)
			of.start(t.fse[1], ofc)
			ll.start(t.fse[0], llc)
		} else {
			of.encode(&w, ofc)
			ml.encode(&w, mlc)
			ll.encode(&w, llc)
		}
		w.add(uint64(s.llen-llBase[llc]), uint(llBits[llc]))
		w.add(uint64(s.mlen-mlBase[mlc]), uint(mlBits[mlc]))
		w.add(uint64(s.offBase), uint(ofc))
	}
	ml.flush(&w)
	of.flush(&w)
	ll.flush(&w)
	return w.close()
}
