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

// huffScratch is the memory a tree description is read with, reused
// from block to block like the tables themselves.
type huffScratch struct {
	counts  [256]int16
	spread  [1 << 6]uint8
	fse     fseTable // the weights' FSE table
	weights [256]uint8
}

// readHuffTable parses a Huffman tree description (RFC 8878 4.2.1) into
// t, reusing its memory and s's (a hostile stream may describe a new tree
// in every block), and returns the bytes it used.
func readHuffTable(t *huffTable, in []byte, s *huffScratch) (int, error) {
	if len(in) == 0 {
		return 0, corrupt("missing Huffman tree description")
	}
	var weights []uint8
	var used int
	if h := int(in[0]); h < 128 {
		if 1+h > len(in) {
			return 0, corrupt("Huffman weights past the block")
		}
		w, err := s.fseWeights(in[1 : 1+h])
		if err != nil {
			return 0, err
		}
		weights, used = w, 1+h
	} else {
		n := h - 127
		used = 1 + (n+1)/2
		if used > len(in) {
			return 0, corrupt("Huffman weights past the block")
		}
		weights = s.weights[:n]
		for i := range weights {
			weights[i] = in[1+i/2] >> (4 * uint(1-i%2)) & 15
		}
	}
	return used, t.build(weights)
}

// huffWeightWork is the work units, beyond the table itself, of a tree
// description whose header byte is h: the weights, and the FSE table
// they were coded with (at most 64 states) when h < 128.
func huffWeightWork(h byte) int {
	if h < 128 {
		return 64 + 255
	}
	return int(h) - 127
}

// fseWeights decodes FSE-compressed Huffman weights into fresh memory
// (the encoder's check of what it wrote).
func fseWeights(in []byte) ([]uint8, error) { return new(huffScratch).fseWeights(in) }

// fseWeights decodes FSE-compressed Huffman weights into s.weights: two
// interleaved states over one backward stream, until a state update reads
// past it.
func (sc *huffScratch) fseWeights(in []byte) ([]uint8, error) {
	counts, log, n, err := readFSECounts(sc.counts[:0], in, 6, 255)
	if err != nil {
		return nil, err
	}
	t := &sc.fse
	if err := t.build(counts, log, sc.spread[:]); err != nil {
		return nil, err
	}
	var r backReader
	if err := r.open(in[n:]); err != nil {
		return nil, err
	}
	s := [2]uint16{uint16(r.read(uint(log))), uint16(r.read(uint(log)))}
	out := sc.weights[:0]
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

// build makes t the decoding table for the listed weights, reusing its
// memory; the last symbol's weight is implied by the others summing to a
// power of two.
func (t *huffTable) build(weights []uint8) error {
	sum := 0
	for _, w := range weights {
		if w > maxHuffLog {
			return corrupt("Huffman weight %d", w)
		}
		if w > 0 {
			sum += 1 << (w - 1)
		}
	}
	if sum == 0 {
		return corrupt("Huffman weights all zero")
	}
	log := bits.Len(uint(sum))
	rest := 1<<log - sum
	if log > maxHuffLog || rest&(rest-1) != 0 || len(weights) > 255 {
		return corrupt("Huffman weights do not make a tree")
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
	if cap(t.entries) < 1<<log {
		t.entries = make([]huffEntry, 1<<maxHuffLog)
	}
	t.log, t.entries = uint8(log), t.entries[:1<<log]
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
	return nil
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
