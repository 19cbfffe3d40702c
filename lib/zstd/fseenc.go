package zstd

import (
	"math/bits"

	"github.com/tinkershell/tinker/lib/lazy"
)

// fseEncTable is the encoder's view of an FSE distribution: for each
// symbol, how to find its next state and how many bits the current one
// sheds (the reference codec's deltaNbBits/deltaFindState form).
type fseEncTable struct {
	log        uint8
	states     []uint16
	deltaBits  []uint32
	deltaState []int32
}

// newFSEEnc builds the encoding table for normalized counts; it walks
// the same spread as buildFSE, so decoding inverts it.
func newFSEEnc(counts []int16, log uint8) *fseEncTable {
	syms, err := spreadFSE(counts, log)
	if err != nil {
		panic(err) // only the predefined, valid, distributions come here
	}
	size := 1 << log
	cumul := make([]int, len(counts)+1)
	for s, c := range counts {
		cumul[s+1] = cumul[s] + int(c)
		if c == -1 {
			cumul[s+1] = cumul[s] + 1
		}
	}
	t := &fseEncTable{log: log, states: make([]uint16, size),
		deltaBits: make([]uint32, len(counts)), deltaState: make([]int32, len(counts))}
	for u, s := range syms {
		t.states[cumul[s]] = uint16(size + u)
		cumul[s]++
	}
	total := int32(0)
	for s, c := range counts {
		switch c {
		case 0:
			t.deltaBits[s] = uint32(log+1)<<16 - uint32(size)
		case -1, 1:
			t.deltaBits[s] = uint32(log)<<16 - uint32(size)
			t.deltaState[s] = total - 1
			total++
		default:
			maxOut := uint32(log) - uint32(bits.Len16(uint16(c-1))-1)
			t.deltaBits[s] = maxOut<<16 - uint32(c)<<maxOut
			t.deltaState[s] = total - int32(c)
			total += int32(c)
		}
	}
	return t
}

// fseEncoder is one FSE state being written.
type fseEncoder struct {
	t     *fseEncTable
	value uint32
}

// start sets the state from the first symbol encoded (the last decoded).
func (e *fseEncoder) start(t *fseEncTable, sym uint8) {
	e.t = t
	nb := (t.deltaBits[sym] + 1<<15) >> 16
	v := nb<<16 - t.deltaBits[sym]
	e.value = uint32(t.states[int32(v>>nb)+t.deltaState[sym]])
}

// encode writes the bits that lead the decoder from sym's state back to
// the current one.
func (e *fseEncoder) encode(w *bitWriter, sym uint8) {
	nb := (e.value + e.t.deltaBits[sym]) >> 16
	w.add(uint64(e.value), uint(nb))
	e.value = uint32(e.t.states[int32(e.value>>nb)+e.t.deltaState[sym]])
}

// flush writes the final state, which the decoder reads first.
func (e *fseEncoder) flush(w *bitWriter) { w.add(uint64(e.value), uint(e.t.log)) }

// encTables are the predefined distributions' encoding tables and the
// length-to-code maps for short lengths, built on first use.
type encTables struct {
	fse    [3]*fseEncTable
	llCode [64]uint8
	mlCode [128]uint8
}

var encTabs = lazy.Value[*encTables]{New: newEncTables}

func newEncTables() *encTables {
	t := &encTables{}
	for i, c := range [3][]int16{llDefault, ofDefault, mlDefault} {
		t.fse[i] = newFSEEnc(c, []uint8{6, 5, 6}[i])
	}
	for c := range llBase {
		for v := int(llBase[c]); v < 64 && v < int(llBase[c])+1<<llBits[c]; v++ {
			t.llCode[v] = uint8(c)
		}
	}
	for c := range mlBase {
		for v := int(mlBase[c]) - 3; v < 128 && v < int(mlBase[c])-3+1<<mlBits[c]; v++ {
			t.mlCode[v] = uint8(c)
		}
	}
	return t
}

// litLenCode is the literal-length code of n.
func (t *encTables) litLenCode(n uint32) uint8 {
	if n < 64 {
		return t.llCode[n]
	}
	return uint8(bits.Len32(n)-1) + 19
}

// matchLenCode is the match-length code of n-3.
func (t *encTables) matchLenCode(n3 uint32) uint8 {
	if n3 < 128 {
		return t.mlCode[n3]
	}
	return uint8(bits.Len32(n3)-1) + 36
}
