package zstd

import (
	"encoding/binary"
	"math/bits"
)

// fseEntry is one state of an FSE decoding table: the symbol it stands
// for, the bits to read for the next state and the base they add to.
type fseEntry struct {
	sym   uint8
	nbits uint8
	base  uint16
}

// fseTable is an FSE decoding table of 1<<log states.
type fseTable struct {
	log     uint8
	entries []fseEntry
}

// readFSECounts parses an FSE table description (RFC 8878 4.1.1) of at
// most maxLog accuracy and symbols up to maxSym; it returns the normalized
// counts (-1 is "less than one"), appended to counts[:0], and the bytes
// used.
func readFSECounts(counts []int16, in []byte, maxLog uint8, maxSym int) ([]int16, uint8, int, error) {
	br := forwardBits{in: in}
	log := uint8(br.read(4)) + 5
	if log > maxLog {
		return nil, 0, 0, corrupt("FSE accuracy log %d over %d", log, maxLog)
	}
	counts = counts[:0]
	remaining := int32(1<<log) + 1
	threshold := int32(1 << log)
	nb := uint(log) + 1
	for remaining > 1 {
		if len(counts) > maxSym {
			return nil, 0, 0, corrupt("FSE table with too many symbols")
		}
		max := 2*threshold - 1 - remaining
		var c int32
		if v := int32(br.peek(nb - 1)); v < max {
			c = v
			br.skip(nb - 1)
		} else {
			c = int32(br.read(nb))
			if c >= threshold {
				c -= max
			}
		}
		c--
		remaining -= abs32(c)
		counts = append(counts, int16(c))
		for remaining < threshold && threshold > 1 {
			nb--
			threshold >>= 1
		}
		if c == 0 {
			for {
				r := br.read(2)
				for i := uint64(0); i < r; i++ {
					counts = append(counts, 0)
				}
				if r != 3 || len(counts) > maxSym+1 {
					break
				}
			}
		}
	}
	if remaining != 1 || br.over() || len(counts) > maxSym+1 {
		return nil, 0, 0, corrupt("FSE table description")
	}
	return counts, log, br.used(), nil
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}

// forwardBits reads a bitstream least significant bit first.
type forwardBits struct {
	in  []byte
	pos uint // bits consumed
}

func (r *forwardBits) peek(k uint) uint64 {
	var buf [8]byte
	i := int(r.pos / 8)
	if i < len(r.in) {
		copy(buf[:], r.in[i:])
	}
	return (binary.LittleEndian.Uint64(buf[:]) >> (r.pos % 8)) & (1<<k - 1)
}

func (r *forwardBits) skip(k uint) { r.pos += k }

func (r *forwardBits) read(k uint) uint64 { v := r.peek(k); r.pos += k; return v }

func (r *forwardBits) over() bool { return int(r.pos) > 8*len(r.in) }

func (r *forwardBits) used() int { return int(r.pos+7) / 8 }

// spreadFSE places each symbol's states over a table of 1<<log, the
// "less than one" symbols at the top, as encoder and decoder both must.
func spreadFSE(counts []int16, log uint8) ([]uint8, error) {
	syms := make([]uint8, 1<<log)
	return syms, spreadInto(syms, counts)
}

// spreadInto is spreadFSE into syms, whose length is the table size.
func spreadInto(syms []uint8, counts []int16) error {
	size := len(syms)
	high := size - 1
	for s, c := range counts {
		if c == -1 {
			if high < 0 {
				return corrupt("FSE table overfull")
			}
			syms[high] = uint8(s)
			high--
		}
	}
	step, mask, pos := size>>1+size>>3+3, size-1, 0
	for s, c := range counts {
		for i := 0; i < int(c); i++ {
			syms[pos] = uint8(s)
			for pos = (pos + step) & mask; pos > high; pos = (pos + step) & mask {
			}
		}
	}
	if pos != 0 {
		return corrupt("FSE table counts do not fill the table")
	}
	return nil
}

// buildFSE makes the decoding table for normalized counts.
func buildFSE(counts []int16, log uint8) (*fseTable, error) {
	t := &fseTable{}
	return t, t.build(counts, log, make([]uint8, 1<<log))
}

// build makes t the decoding table for normalized counts, reusing its
// memory (a hostile stream may describe new tables in every block);
// spread is scratch of at least 1<<log bytes.
func (t *fseTable) build(counts []int16, log uint8, spread []uint8) error {
	size := 1 << log
	syms := spread[:size]
	if err := spreadInto(syms, counts); err != nil {
		return err
	}
	var next [256]uint16
	for s, c := range counts {
		next[s] = uint16(max(c, 1))
	}
	if cap(t.entries) < size {
		t.entries = make([]fseEntry, size)
	}
	t.log, t.entries = log, t.entries[:size]
	for u, s := range syms {
		x := next[s]
		next[s]++
		nb := log - uint8(bits.Len16(x)-1)
		t.entries[u] = fseEntry{sym: s, nbits: nb, base: x<<nb - uint16(size)}
	}
	return nil
}

// rleFSE is the one-state table of RLE mode: always sym, no bits read.
func rleFSE(sym uint8) *fseTable {
	return &fseTable{entries: []fseEntry{{sym: sym}}}
}
