package engine

import (
	"math"
	"os"
)

// arena hands out scratch memory for one datum (zeroed by take and rows,
// not by takeToFill and rowsToFill) and is reused by the next, so a long
// batch does not churn the garbage collector. Offsets are
// counted even past the buffer (those takes come from the heap), so peak is
// what the buffer must hold to serve the datum alone.
//
// The row slices of rows, rowsToFill and view come from hdr, which grows
// by doubling (once per trainer, in effect) and is released with the
// floats: made per call, they were a step's largest heap garbage once the
// attention scratch was pooled (24 bytes a row a call: about 200 MB in a
// 4096-token step of the 0.6B shape), and garbage is what lets peak RSS
// grow past the live heap (TestTrainStepGarbageBounded).
type arena struct {
	buf  []float32
	off  int
	peak int

	hdr  [][]float32
	hoff int

	// poison makes takeToFill hand out memory full of NaN: the
	// TINKER_POISON_SCRATCH diagnostic, set for a trainer's arenas when
	// the trainer is made (poisonScratch).
	poison bool
}

// arenaMark is a point release returns the arena to.
type arenaMark struct{ off, hoff int }

func (a *arena) mark() arenaMark { return arenaMark{a.off, a.hoff} }

// reserve makes the buffer hold at least n floats, dropping the old one
// before allocating the new.
func (a *arena) reserve(n int) {
	if len(a.buf) < n {
		a.buf = nil
		a.buf = make([]float32, n)
		adviseHuge(a.buf)
	}
}

// reset starts a datum: the buffer grows to what the last one took, and
// the row slices forget it.
func (a *arena) reset() {
	if a.peak > len(a.buf) {
		a.buf = make([]float32, a.peak)
		adviseHuge(a.buf)
	}
	clear(a.hdr)
	a.off, a.peak, a.hoff = 0, 0, 0
}

func (a *arena) take(n int) []float32 {
	s := a.takeToFill(n)
	if a.off <= len(a.buf) { // memory from the heap is zero already
		clear(s)
	}
	return s
}

// release gives back everything taken since m.
func (a *arena) release(m arenaMark) { a.off, a.hoff = m.off, m.hoff }

// rows returns n zeroed rows of width floats each.
func (a *arena) rows(n, width int) [][]float32 {
	return a.view(a.take(n*width), n, width)
}

// takeToFill is take without the clearing, and rowsToFill rows without
// it: for memory the caller writes whole before it reads any of it (a
// product's outputs, a norm's, a copy). Clearing those wrote some 600 MB
// per 0.6B training step once more for nothing: about 3% of the step in
// an interleaved A/B. TestArenaToFillIsWritten holds the callers to it
// with the arena poisoned.
func (a *arena) takeToFill(n int) []float32 {
	lo := a.off
	a.off += n
	a.peak = max(a.peak, a.off)
	var s []float32
	if a.off > len(a.buf) {
		s = make([]float32, n)
	} else {
		s = a.buf[lo:a.off:a.off]
	}
	if a.poison {
		fillNaN(s)
	}
	return s
}

// poisonScratchEnv names the diagnostic that poisons the scratch
// takeToFill hands out, as glibc's MALLOC_PERTURB_ does for malloc: with
// it set to anything but "" or "0", every such take comes full of NaN,
// so an element a caller reads before writing it turns the results into
// NaN instead of silently reusing what an earlier take (another layer,
// another datum) left there. Results are bit-identical with it set or not
// unless a caller breaks that promise; it costs a fill of every take, so
// it is for chasing a numerical bug, not for use (docs/engine-measurement.md).
const poisonScratchEnv = "TINKER_POISON_SCRATCH"

// poisonScratch reads TINKER_POISON_SCRATCH. It is read when a trainer is
// made, never at start-up or per take: off, the arena's cost is the load
// and test of a bool it holds already.
func poisonScratch() bool {
	v := os.Getenv(poisonScratchEnv)
	return v != "" && v != "0"
}

func fillNaN(s []float32) {
	nan := float32(math.NaN())
	for i := range s {
		s[i] = nan
	}
}

func (a *arena) rowsToFill(n, width int) [][]float32 {
	return a.view(a.takeToFill(n*width), n, width)
}

// view is rowsOf with the row slices taken from the arena.
func (a *arena) view(slab []float32, n, width int) [][]float32 {
	lo := a.hoff
	a.hoff += n
	if a.hoff > len(a.hdr) { // the rows before keep the old slab
		a.hdr = make([][]float32, 2*a.hoff)
	}
	rs := a.hdr[lo:a.hoff:a.hoff]
	for i := range rs {
		rs[i] = slab[i*width : (i+1)*width : (i+1)*width]
	}
	return rs
}
