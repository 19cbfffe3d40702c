package zstd

import "math/bits"

// maxHuffLog is the longest Huffman code zstd allows.
const maxHuffLog = 11

// huffEntry is one slot of a Huffman decoding table indexed by the next
// log bits of the stream.
type huffEntry struct {
	sym   uint8
	nbits uint8
}

type huffTable struct {
	log     uint8
	entries []huffEntry
}

// readHuffTable parses a Huffman tree description (RFC 8878 4.2.1) and
// returns the table and the bytes it used.
func readHuffTable(in []byte) (*huffTable, int, error) {
	if len(in) == 0 {
		return nil, 0, corrupt("missing Huffman tree description")
	}
	var weights []uint8
	var used int
	if h := int(in[0]); h < 128 {
		if 1+h > len(in) {
			return nil, 0, corrupt("Huffman weights past the block")
		}
		w, err := fseWeights(in[1 : 1+h])
		if err != nil {
			return nil, 0, err
		}
		weights, used = w, 1+h
	} else {
		n := h - 127
		used = 1 + (n+1)/2
		if used > len(in) {
			return nil, 0, corrupt("Huffman weights past the block")
		}
		weights = make([]uint8, n)
		for i := range weights {
			weights[i] = in[1+i/2] >> (4 * uint(1-i%2)) & 15
		}
	}
	t, err := buildHuff(weights)
	return t, used, err
}

// fseWeights decodes FSE-compressed Huffman weights: two interleaved
// states over one backward stream, until a state update reads past it.
func fseWeights(in []byte) ([]uint8, error) {
	counts, log, n, err := readFSECounts(make([]int16, 0, 256), in, 6, 255)
	if err != nil {
		return nil, err
	}
	t, err := buildFSE(counts, log)
	if err != nil {
		return nil, err
	}
	var r backReader
	if err := r.open(in[n:]); err != nil {
		return nil, err
	}
	s := [2]uint16{uint16(r.read(uint(log))), uint16(r.read(uint(log)))}
	out := make([]uint8, 0, 255)
	for i := 0; ; i ^= 1 {
		if len(out) >= 254 || r.overread() {
			return nil, corrupt("Huffman weights")
		}
		e := t.entries[s[i]]
		out = append(out, e.sym)
		s[i] = e.base + uint16(r.read(uint(e.nbits)))
		if r.overread() {
			return append(out, t.entries[s[i^1]].sym), nil
		}
	}
}

// buildHuff makes the decoding table from the listed weights; the last
// symbol's weight is implied by the others summing to a power of two.
func buildHuff(weights []uint8) (*huffTable, error) {
	sum := 0
	for _, w := range weights {
		if w > maxHuffLog {
			return nil, corrupt("Huffman weight %d", w)
		}
		if w > 0 {
			sum += 1 << (w - 1)
		}
	}
	if sum == 0 {
		return nil, corrupt("Huffman weights all zero")
	}
	log := bits.Len(uint(sum))
	rest := 1<<log - sum
	if log > maxHuffLog || rest&(rest-1) != 0 || len(weights) > 255 {
		return nil, corrupt("Huffman weights do not make a tree")
	}
	weights = append(weights, uint8(bits.Len(uint(rest))))
	var start [maxHuffLog + 2]int
	for _, w := range weights {
		if w > 0 {
			start[w] += 1 << (w - 1)
		}
	}
	pos := 0
	for w := 1; w <= maxHuffLog; w++ {
		start[w], pos = pos, pos+start[w]
	}
	t := &huffTable{log: uint8(log), entries: make([]huffEntry, 1<<log)}
	for s, w := range weights {
		if w == 0 {
			continue
		}
		e := huffEntry{sym: uint8(s), nbits: uint8(log) + 1 - w}
		for i := 0; i < 1<<(w-1); i++ {
			t.entries[start[w]+i] = e
		}
		start[w] += 1 << (w - 1)
	}
	return t, nil
}

// decode fills out from one Huffman-coded backward stream, which must be
// consumed exactly.
func (t *huffTable) decode(out, in []byte) error {
	var r backReader
	if err := r.open(in); err != nil {
		return err
	}
	k := uint(t.log)
	for i := range out {
		e := t.entries[r.peek(k)]
		out[i] = e.sym
		r.skip(uint(e.nbits))
	}
	if !r.done() {
		return corrupt("Huffman stream not consumed exactly")
	}
	return nil
}
