package zstd

import "encoding/binary"

const (
	hashLog  = 16
	minMatch = 4
)

// matcher finds matches with one hash table of the last position seen
// for each 4-byte hash, checking the repeat offset first.
type matcher struct {
	src   []byte
	table []int32 // position+1; 0 is empty
	reps  repeats
	lits  []byte
	seqs  []seq
}

func newMatcher(src []byte) *matcher {
	return &matcher{src: src, table: make([]int32, 1<<hashLog), reps: newRepeats()}
}

func hash4(v uint32) uint32 { return v * 2654435761 >> (32 - hashLog) }

// appendBlock finds the sequences of src[start:end] and writes its block.
func (m *matcher) appendBlock(dst []byte, start, end int, last bool) []byte {
	m.lits, m.seqs = m.lits[:0], m.seqs[:0]
	src := m.src
	litStart, pos := start, start
	for pos+minMatch+4 <= end {
		cur := binary.LittleEndian.Uint32(src[pos:])
		cand, off := m.candidate(pos, cur)
		if cand < 0 {
			pos += 1 + (pos-litStart)>>6 // skip faster through data that does not match
			continue
		}
		for pos > litStart && cand > 0 && src[cand-1] == src[pos-1] {
			pos, cand = pos-1, cand-1
		}
		n := minMatch
		for pos+n < end && src[cand+n] == src[pos+n] {
			n++
		}
		m.addSeq(litStart, pos, off, n)
		pos += n
		litStart = pos
		if pos+4 <= end {
			m.table[hash4(binary.LittleEndian.Uint32(src[pos-2:]))] = int32(pos - 1)
		}
	}
	m.lits = append(m.lits, src[litStart:end]...)
	if start == end {
		return appendBlockHeader(dst, last, 0, 0)
	}
	return appendCompressedBlock(dst, src[start:end], m.lits, m.seqs, last)
}

// candidate returns an earlier position whose 4 bytes equal cur (the
// bytes at pos) and its offset, or -1; it records pos in the table.
func (m *matcher) candidate(pos int, cur uint32) (int, int) {
	src := m.src
	if r := m.reps[0]; pos-r >= 0 && binary.LittleEndian.Uint32(src[pos-r:]) == cur {
		return pos - r, r
	}
	h := hash4(cur)
	c := int(m.table[h]) - 1
	m.table[h] = int32(pos + 1)
	if c < 0 || pos-c > 1<<encWindowLog || binary.LittleEndian.Uint32(src[c:]) != cur {
		return -1, 0
	}
	return c, pos - c
}

// addSeq records the literals src[litStart:pos] and a match of n at off,
// coding the offset as a repeat when one names it.
func (m *matcher) addSeq(litStart, pos, off, n int) {
	llen := pos - litStart
	m.lits = append(m.lits, m.src[litStart:pos]...)
	code := uint32(off + 3)
	for v := uint32(1); v <= 3; v++ {
		r := m.reps
		if o, err := r.resolve(v, llen); err == nil && o == off {
			code = v
			break
		}
	}
	m.reps.resolve(code, llen)
	m.seqs = append(m.seqs, seq{llen: uint32(llen), mlen: uint32(n), offBase: code})
}
