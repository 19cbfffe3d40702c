package zstd

import "encoding/binary"

const (
	hashLog = 17
	// hashLen is the bytes hashed: a shorter match at a new offset costs
	// more in sequence bits than its literals would.
	hashLen = 8
	// repMin is the shortest match taken at the repeat offset.
	repMin = 4
)

// matcher finds matches with one hash table of the last position seen
// for each hashLen-byte hash, checking the repeat offset first.
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

func hashAt(src []byte, pos int) uint64 {
	return (binary.LittleEndian.Uint64(src[pos:]) << (64 - 8*hashLen)) * 0x9E3779B185EBCA87 >> (64 - hashLog)
}

// appendBlock finds the sequences of src[start:end] and writes its block.
func (m *matcher) appendBlock(dst []byte, start, end int, last bool) []byte {
	m.lits, m.seqs = m.lits[:0], m.seqs[:0]
	src := m.src
	litStart, pos := start, start
	if len(src) >= 1<<31-1 {
		pos = end // positions would overflow the table's int32: literals only
	}
	for pos+8 <= end {
		cand, off := m.candidate(pos)
		if cand < 0 {
			pos += 1 + (pos-litStart)>>6 // skip faster through data that does not match
			continue
		}
		for pos > litStart && cand > 0 && src[cand-1] == src[pos-1] {
			pos, cand = pos-1, cand-1
		}
		n := matchLen(src[cand:], src[pos:end])
		m.addSeq(litStart, pos, off, n)
		pos += n
		litStart = pos
		if pos+8 <= end {
			m.table[hashAt(src, pos-2)] = int32(pos - 1)
		}
	}
	m.lits = append(m.lits, src[litStart:end]...)
	if start == end {
		return appendBlockHeader(dst, last, 0, 0)
	}
	return appendCompressedBlock(dst, src[start:end], m.lits, m.seqs, last)
}

// matchLen is the length of the common prefix of a and b.
func matchLen(a, b []byte) int {
	n := 0
	for n+8 <= len(b) && binary.LittleEndian.Uint64(a[n:]) == binary.LittleEndian.Uint64(b[n:]) {
		n += 8
	}
	for n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// candidate returns an earlier position matching the bytes at pos (at
// least repMin at the repeat offset, hashLen elsewhere) and its offset,
// or -1; it records pos in the table.
func (m *matcher) candidate(pos int) (int, int) {
	src := m.src
	if r := m.reps[0]; pos-r >= 0 && binary.LittleEndian.Uint32(src[pos-r:]) == binary.LittleEndian.Uint32(src[pos:]) {
		return pos - r, r
	}
	h := hashAt(src, pos)
	c := int(m.table[h]) - 1
	m.table[h] = int32(pos + 1)
	if c < 0 || pos-c > 1<<encWindowLog || matchLen(src[c:c+hashLen], src[pos:pos+hashLen]) < hashLen {
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
