package zstd

// Sequence symbol limits and the largest accuracy log of each table.
var (
	seqMaxSym = [3]int{35, 31, 52}
	seqMaxLog = [3]uint8{9, 8, 9}
)

// readSeqTables parses the sequences section header up to the bitstream:
// the count and the three tables (literal lengths, offsets, match
// lengths). It returns the count and the bytes used.
func (d *decoder) readSeqTables(in []byte) (int, int, error) {
	if len(in) == 0 {
		return 0, 0, corrupt("missing sequences section")
	}
	n, pos := int(in[0]), 1
	switch {
	case n == 0:
		return 0, 1, nil
	case n == 255:
		if len(in) < 3 {
			return 0, 0, corrupt("sequence count past the block")
		}
		n, pos = int(in[1])|int(in[2])<<8+0x7F00, 3
	case n >= 128:
		if len(in) < 2 {
			return 0, 0, corrupt("sequence count past the block")
		}
		n, pos = (n-128)<<8|int(in[1]), 2
	}
	if pos >= len(in) {
		return 0, 0, corrupt("missing sequence modes")
	}
	modes := in[pos]
	pos++
	if modes&3 != 0 {
		return 0, 0, corrupt("reserved sequence mode bits set")
	}
	for i := 0; i < 3; i++ {
		used, err := d.readSeqTable(i, modes>>(6-2*i)&3, in[pos:])
		if err != nil {
			return 0, 0, err
		}
		pos += used
	}
	return n, pos, nil
}

// readSeqTable sets table i from its mode: predefined, RLE, described
// here, or repeated from the previous block.
func (d *decoder) readSeqTable(i int, mode uint8, in []byte) (int, error) {
	switch mode {
	case 0:
		d.seqTables[i] = predefined.Get()[i]
		return 0, nil
	case 1:
		if len(in) == 0 || int(in[0]) > seqMaxSym[i] {
			return 0, corrupt("RLE sequence symbol")
		}
		d.seqTables[i] = rleFSE(in[0])
		return 1, nil
	case 2:
		counts, log, n, err := readFSECounts(d.counts[:0], in, seqMaxLog[i], seqMaxSym[i])
		if err != nil {
			return 0, err
		}
		if n > len(in) {
			return 0, corrupt("FSE table past the block")
		}
		if err := d.spend(workPerState * (1<<log + len(counts))); err != nil {
			return 0, err
		}
		d.seqTables[i] = &d.ownTables[i]
		return n, d.ownTables[i].build(counts, log, d.spread[:])
	}
	if d.seqTables[i] == nil {
		return 0, corrupt("repeated sequence table without an earlier one")
	}
	return 0, nil
}

// seqState is one FSE state walking its table.
type seqState struct {
	t *fseTable
	s uint16
}

func (st *seqState) first(r *backReader) { st.s = uint16(r.read(uint(st.t.log))) }

func (st *seqState) sym() uint8 { return st.t.entries[st.s].sym }

func (st *seqState) update(r *backReader) {
	e := st.t.entries[st.s]
	st.s = e.base + uint16(r.read(uint(e.nbits)))
}

// execSequences decodes n sequences from the bitstream in and appends
// their literals and matches to d.out, then the literals left over.
func (d *decoder) execSequences(in []byte, n int) error {
	var r backReader
	if err := r.open(in); err != nil {
		return err
	}
	ll, of, ml := seqState{t: d.seqTables[0]}, seqState{t: d.seqTables[1]}, seqState{t: d.seqTables[2]}
	ll.first(&r)
	of.first(&r)
	ml.first(&r)
	lits := d.lits
	for i := 0; i < n; i++ {
		llen, off, mlen, err := d.nextSeq(&r, &ll, &of, &ml, i+1 < n)
		if err != nil {
			return err
		}
		if llen > len(lits) {
			return corrupt("sequence needs more literals than the block has")
		}
		if err := d.appendSeq(lits[:llen], off, mlen); err != nil {
			return err
		}
		lits = lits[llen:]
	}
	if !r.done() {
		return corrupt("sequence bitstream not consumed exactly")
	}
	return d.appendOut(lits)
}

// nextSeq decodes one sequence's literal length, offset and match
// length, then moves the states on unless it is the last.
func (d *decoder) nextSeq(r *backReader, ll, of, ml *seqState, more bool) (int, int, int, error) {
	llc, ofc, mlc := ll.sym(), of.sym(), ml.sym()
	if llc > 35 || mlc > 52 || ofc > 31 {
		return 0, 0, 0, corrupt("sequence code out of range")
	}
	offVal := uint32(1)<<ofc | uint32(r.read(uint(ofc)))
	mlen := int(mlBase[mlc]) + int(r.read(uint(mlBits[mlc])))
	llen := int(llBase[llc]) + int(r.read(uint(llBits[llc])))
	if more {
		ll.update(r)
		ml.update(r)
		of.update(r)
	}
	if r.overread() {
		return 0, 0, 0, corrupt("sequences read past their bitstream")
	}
	off, err := d.reps.resolve(offVal, llen)
	return llen, off, mlen, err
}

// repeats are the three repeat offsets a frame carries from sequence to
// sequence; encoder and decoder keep them the same way.
type repeats [3]int

func newRepeats() repeats { return repeats{1, 4, 8} }

// resolve turns an offset value into the offset it stands for and
// updates the repeats (RFC 8878 3.1.2.5): values 1-3 name a repeat,
// shifted by one when the sequence has no literals.
func (r *repeats) resolve(v uint32, llen int) (int, error) {
	if v > 3 {
		*r = repeats{int(v - 3), r[0], r[1]}
		return r[0], nil
	}
	idx := int(v) - 1
	if llen == 0 {
		idx++
	}
	switch idx {
	case 0:
		return r[0], nil
	case 1:
		r[0], r[1] = r[1], r[0]
	case 2:
		*r = repeats{r[2], r[0], r[1]}
	default:
		o := r[0] - 1
		if o == 0 {
			return 0, corrupt("zero repeat offset")
		}
		*r = repeats{o, r[0], r[1]}
	}
	return r[0], nil
}
