package zstd

import (
	"encoding/binary"
	"fmt"
)

const (
	frameMagic     = 0xFD2FB528
	skippableMagic = 0x184D2A50 // low four bits free
	maxBlockSize   = 128 << 10
)

// Decoder decodes whole zstd streams held in memory. Its zero value
// refuses everything: set both bounds.
type Decoder struct {
	// MaxOutput bounds the decoded content of the whole stream, checked
	// before each allocation and append.
	MaxOutput int
	// MaxWindow bounds the window a frame may ask for.
	MaxWindow int
}

// Work units: what decoding spends, counted so that a stream costs at
// most a fixed multiple of what its allowed output justifies, whatever
// its shape. zstd lets every block describe new tables (up to 2,048
// Huffman and 1,280 FSE states) for a byte or two of output, so without a
// count a 64 MiB hostile body costs ~17 s of CPU. A unit is at most
// about 3 ns of CPU on every frame shape measured, and table building is
// weighted above its cost (0.5-0.9 ns a unit, against 1.7-3.2 for real
// bodies), so a hostile frame stops before a legitimate body at the bound
// would finish (BenchmarkWorkUnits; docs/zstd.md, "Work budget").
const (
	workPerFrame    = 64
	workPerBlock    = 32
	workPerState    = 4 // a table state or Huffman entry built, a count read
	workPerSequence = 8
	workPerLiteral  = 1
	workPerOutput   = 1
	// The budget is workBudgetPerByte units per byte of MaxOutput plus
	// workBudgetBase. Real encoders' frames cost under 3 units per byte of
	// content (TestWorkOfRealFrames), so a frame at the output bound fits
	// unless its blocks average under ~20 bytes or describe new tables
	// every few hundred bytes, which no encoder does to save space.
	workBudgetPerByte = 8
	workBudgetBase    = 1 << 20
)

// workBudget is the work a Decoder allows one DecodeAll call.
func (dc Decoder) workBudget() int64 {
	out := int64(max(dc.MaxOutput, 0))
	if out > (1<<62)/workBudgetPerByte {
		return 1 << 62
	}
	return out*workBudgetPerByte + workBudgetBase
}

// decoder is the state of one DecodeAll call.
type decoder struct {
	Decoder
	work, budget int64 // units spent, units allowed
	out          []byte
	base         int // len(dst): where this call's output starts
	frameStart   int // where the current frame's content starts in out
	blockStart   int // where the current block's content starts in out
	limit        int // len(out) the current block may not pass (setLimit)
	blockMax     int // the current frame's block content maximum
	window       int
	lits         []byte
	huff         *huffTable // ownHuff once a block described a tree
	ownHuff      huffTable
	huffMem      huffScratch  // scratch for reading ownHuff
	seqTables    [3]*fseTable // predefined, RLE or one of ownTables
	ownTables    [3]fseTable  // described tables, their memory reused
	counts       [256]int16   // scratch for table descriptions
	spread       [512]uint8   // scratch for table builds
	reps         repeats
}

// DecodeAll decodes every frame of src (skippable frames skipped) and
// appends the content to dst. A stream with no frame is corrupt.
// A stream that needs more work than the bounds justify is refused with
// ErrTooMuchWork (docs/zstd.md, "Work budget").
func (dc Decoder) DecodeAll(src, dst []byte) ([]byte, error) {
	d := &decoder{Decoder: dc, out: dst, base: len(dst), budget: dc.workBudget()}
	if err := d.run(src); err != nil {
		return dst, err
	}
	return d.out, nil
}

// run decodes every frame of src into d.out.
func (d *decoder) run(src []byte) error {
	if len(src) == 0 {
		return corrupt("empty input")
	}
	for len(src) > 0 {
		n, err := d.frame(src)
		if err != nil {
			return err
		}
		src = src[n:]
	}
	return nil
}

// spend counts units of work and refuses the stream once they pass the
// budget. Callers spend before the work where they know its size.
func (d *decoder) spend(units int) error {
	if d.work += int64(units); d.work > d.budget {
		return d.overBudget()
	}
	return nil
}

// overBudget is spend's error, apart so that spend inlines.
func (d *decoder) overBudget() error {
	return fmt.Errorf("%w (over %d units for at most %d bytes of content)", ErrTooMuchWork, d.budget, d.MaxOutput)
}

// frame decodes the frame at the start of src and returns its length.
func (d *decoder) frame(src []byte) (int, error) {
	if len(src) < 4 {
		return 0, corrupt("truncated frame magic")
	}
	if err := d.spend(workPerFrame); err != nil {
		return 0, err
	}
	magic := binary.LittleEndian.Uint32(src)
	if magic&^15 == skippableMagic {
		return skippable(src)
	}
	if magic != frameMagic {
		return 0, corrupt("not a zstd frame (magic %#08x)", magic)
	}
	h, err := d.header(src[4:])
	if err != nil {
		return 0, err
	}
	pos := 4 + h.size
	d.reserve(h.contentSize, len(src))
	d.frameStart, d.window, d.huff, d.seqTables, d.reps = len(d.out), h.window, nil, [3]*fseTable{}, newRepeats()
	n, err := d.blocks(src[pos:], min(h.window, maxBlockSize))
	if err != nil {
		return 0, err
	}
	pos += n
	m, err := d.checkContent(h, src[pos:])
	return pos + m, err
}

// skippable returns the length of the skippable frame at src's start.
func skippable(src []byte) (int, error) {
	if len(src) < 8 || uint64(binary.LittleEndian.Uint32(src[4:])) > uint64(len(src)-8) {
		return 0, corrupt("skippable frame past the input")
	}
	return 8 + int(binary.LittleEndian.Uint32(src[4:])), nil
}

// checkContent checks the frame's content against its declared size
// and its checksum (at tail's start); it returns the checksum's length.
func (d *decoder) checkContent(h frameHeader, tail []byte) (int, error) {
	content := d.out[d.frameStart:]
	if h.contentSize >= 0 && uint64(len(content)) != uint64(h.contentSize) {
		return 0, corrupt("frame content is %d bytes, header says %d", len(content), h.contentSize)
	}
	if !h.checksum {
		return 0, nil
	}
	if len(tail) < 4 {
		return 0, corrupt("missing content checksum")
	}
	if uint32(xxh64(content)) != binary.LittleEndian.Uint32(tail) {
		return 0, ErrChecksum
	}
	return 4, nil
}

type frameHeader struct {
	size        int   // header bytes after the magic
	window      int   // window size in bytes
	contentSize int64 // -1 when absent
	checksum    bool
}

// header parses a frame header and checks it against the bounds before
// anything is allocated.
func (d *decoder) header(src []byte) (frameHeader, error) {
	if len(src) < 1 {
		return frameHeader{}, corrupt("truncated frame header")
	}
	fhd := src[0]
	single, dictLen := fhd&0x20 != 0, []int{0, 1, 2, 4}[fhd&3]
	fcsLen := []int{0, 2, 4, 8}[fhd>>6]
	if fcsLen == 0 && single {
		fcsLen = 1
	}
	h := frameHeader{contentSize: -1, checksum: fhd&4 != 0}
	if fhd&8 != 0 {
		return h, corrupt("reserved frame header bit set")
	}
	wdLen := 1
	if single {
		wdLen = 0
	}
	h.size = 1 + wdLen + dictLen + fcsLen
	if len(src) < h.size {
		return h, corrupt("truncated frame header")
	}
	var window uint64
	if !single {
		window = windowSize(src[1])
	}
	if leUint(src[1+wdLen:1+wdLen+dictLen]) != 0 {
		return h, ErrDictionary
	}
	if fcsLen > 0 {
		cs := leUint(src[1+wdLen+dictLen : h.size])
		if fcsLen == 2 {
			cs += 256
		}
		if cs > uint64(d.room()) {
			return h, fmt.Errorf("%w (frame says %d bytes)", ErrOutputTooLarge, cs)
		}
		h.contentSize = int64(cs)
		if single {
			window = cs
		}
	}
	if window > uint64(d.MaxWindow) {
		return h, fmt.Errorf("%w (%d bytes)", ErrWindowTooLarge, window)
	}
	h.window = int(window)
	return h, nil
}

// windowSize decodes a window descriptor: a power of two and eighths.
func windowSize(b byte) uint64 {
	w := uint64(1) << (10 + b>>3)
	return w + w/8*uint64(b&7)
}

// leUint reads up to 8 bytes as a little-endian number.
func leUint(b []byte) uint64 {
	var buf [8]byte
	copy(buf[:], b)
	return binary.LittleEndian.Uint64(buf[:])
}

// room is how many more bytes the output may take.
func (d *decoder) room() int { return max(d.MaxOutput-(len(d.out)-d.base), 0) }

// setLimit starts a block: its content may take blockMax bytes (RFC 8878
// 3.1.1.2.4: 128 KiB, or the window when smaller) and no more than the
// output bound leaves. Every write checks against it before it grows
// the output, so a block's sequences cannot run past either: checked
// once the block ended, one block could grow the output by up to the
// whole bound.
func (d *decoder) setLimit() {
	d.blockStart, d.limit = len(d.out), len(d.out)+min(d.blockMax, d.room())
}

// fits reports whether n more bytes stay within the current block's
// limit.
func (d *decoder) fits(n int) bool { return n <= d.limit-len(d.out) }

// overLimit is the error for n more bytes that do not fit: the block's
// maximum when they pass it (the frame is corrupt), else the output
// bound. Apart so that the writes' checks inline.
func (d *decoder) overLimit(n int) error {
	if len(d.out)+n-d.blockStart > d.blockMax {
		return corrupt("block content over %d bytes (the frame's block maximum)", d.blockMax)
	}
	return ErrOutputTooLarge
}

// reserve grows the output for a frame's declared size, but no further
// than its input could plausibly expand to: the size is the sender's word.
// It doubles the capacity when that is more, up to the output bound:
// growing by exactly the size copied everything so far once per frame,
// quadratic in a stream of many tiny frames.
func (d *decoder) reserve(size int64, inLen int) {
	want := min(size, int64(1<<20+64*inLen))
	if want > int64(cap(d.out)-len(d.out)) {
		n := max(len(d.out)+int(want), min(2*cap(d.out), d.base+d.MaxOutput))
		d.out = append(make([]byte, 0, n), d.out...)
	}
}

// blocks decodes a frame's blocks and returns the bytes they used.
func (d *decoder) blocks(src []byte, blockMax int) (int, error) {
	pos := 0
	d.blockMax = blockMax
	for {
		if len(src)-pos < 3 {
			return 0, corrupt("truncated block header")
		}
		h := uint32(src[pos]) | uint32(src[pos+1])<<8 | uint32(src[pos+2])<<16
		pos += 3
		last, kind, size := h&1 != 0, h>>1&3, int(h>>3)
		start := len(d.out)
		d.setLimit()
		if err := d.spend(workPerBlock); err != nil {
			return 0, err
		}
		var err error
		switch kind {
		case 0:
			err = d.rawBlock(src[pos:], size, blockMax)
		case 1:
			err = d.rleBlock(src[pos:], size, blockMax)
			size = 1
		case 2:
			if size > blockMax || size > len(src)-pos {
				return 0, corrupt("compressed block of %d bytes", size)
			}
			err = d.compressedBlock(src[pos:pos+size], blockMax)
		default:
			err = corrupt("reserved block type")
		}
		if err != nil {
			return 0, err
		}
		if err := d.spend(workPerOutput * (len(d.out) - start)); err != nil {
			return 0, err
		}
		pos += size
		if last {
			return pos, nil
		}
	}
}

func (d *decoder) rawBlock(src []byte, size, blockMax int) error {
	if size > blockMax || size > len(src) {
		return corrupt("raw block of %d bytes", size)
	}
	return d.appendOut(src[:size])
}

func (d *decoder) rleBlock(src []byte, size, blockMax int) error {
	if size > blockMax || len(src) < 1 {
		return corrupt("RLE block of %d bytes", size)
	}
	if !d.fits(size) {
		return d.overLimit(size)
	}
	for i := 0; i < size; i++ {
		d.out = append(d.out, src[0])
	}
	return nil
}

// compressedBlock decodes literals then sequences.
func (d *decoder) compressedBlock(src []byte, blockMax int) error {
	n, err := d.readLiterals(src, blockMax)
	if err != nil {
		return err
	}
	nseq, m, err := d.readSeqTables(src[n:])
	if err != nil {
		return err
	}
	if err := d.spend(workPerSequence * nseq); err != nil {
		return err
	}
	if nseq == 0 {
		if n+m != len(src) {
			return corrupt("bytes after an empty sequences section")
		}
		return d.appendOut(d.lits)
	}
	return d.execSequences(src[n+m:], nseq)
}

// appendOut appends b within the output bound.
func (d *decoder) appendOut(b []byte) error {
	if !d.fits(len(b)) {
		return d.overLimit(len(b))
	}
	d.out = append(d.out, b...)
	return nil
}

// appendSeq appends a sequence's literals and its match of mlen bytes
// off bytes back, which may overlap what it writes.
func (d *decoder) appendSeq(lits []byte, off, mlen int) error {
	if !d.fits(len(lits) + mlen) {
		return d.overLimit(len(lits) + mlen)
	}
	d.out = append(d.out, lits...)
	if off > len(d.out)-d.frameStart || off > d.window {
		return corrupt("match offset %d beyond the window", off)
	}
	from := len(d.out) - off
	if off >= mlen {
		d.out = append(d.out, d.out[from:from+mlen]...)
		return nil
	}
	for i := 0; i < mlen; i++ {
		d.out = append(d.out, d.out[from+i])
	}
	return nil
}
