//go:build goexperiment.simd && amd64 && linux

package engine

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

//go:generate go run ./internal/asmgen/ladder -out ladder_amd64.s -stubs ladder_stub_amd64.go

// TestReadLadderSums requires each ladder rung (ladder_amd64.s) to compute
// what its notes say over every line it is given: the lane sum of its out
// against a float64 sum of the same products, over four streams' worth of
// steps with the streams apart. A rung that skipped a line or paired a
// weight with the wrong x would miss by far more than float32 rounding.
func TestReadLadderSums(t *testing.T) {
	if !fwdAsm {
		t.Skip("the ladder needs a CPU with AVX-512")
	}
	r := newRNG(5)
	x := make([]float32, 1024)
	fill(x, r, 1)
	const steps = 4
	for _, k := range []struct {
		name string
		step int // bytes of a stream a step
		run  func(w *uint16, stride, n int, out *[16]float32)
		// term is the product step i, stream s, column j (of its step's
		// bytes, in bfloat16 elements) adds, from the stream's weights ws.
		term func(ws []uint16, i, j int) float64
	}{
		{"fma", 256, func(w *uint16, stride, n int, out *[16]float32) { ladderFMA(w, stride, n, 1024, &x[0], out) },
			func(ws []uint16, i, j int) float64 {
				if j%2 == 1 {
					return 0
				}
				f := math.Float32frombits(uint32(ws[i*128+j]) | uint32(ws[i*128+j+1])<<16)
				return float64(x[j/2]) * float64(f)
			}},
		{"widen", 256, func(w *uint16, stride, n int, out *[16]float32) { ladderWiden(w, stride, n, 1024, &x[0], out) },
			func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*128+j])) }},
		{"chains", 256, func(w *uint16, stride, n int, out *[16]float32) { ladderChains(w, stride, n, 1024, &x[0], out) },
			func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*128+j])) }},
		{"order", 64, func(w *uint16, stride, n int, out *[16]float32) { ladderOrder(w, stride, n, &x[0], out) },
			func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*32+j])) }},
		// rows of one step: x from its start each step
		{"rows", 64, func(w *uint16, stride, n int, out *[16]float32) { ladderRows(w, stride, 1, &x[0], out, n) },
			func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*32+j])) }},
		{"rows4", 256, func(w *uint16, stride, n int, out *[16]float32) { ladderRows4(w, stride, 4, &x[0], out, n) },
			func(ws []uint16, i, j int) float64 { return float64(x[j%128]) * float64(bf16(ws[i*128+j])) }},
		{"rowsX", 64, func(w *uint16, stride, n int, out *[16]float32) { ladderRowsX(w, stride, 1, &x[0], out, n) },
			func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*32+j])) }},
		{"rows8X", 512, func(w *uint16, stride, n int, out *[16]float32) { ladderRows8X(w, stride, 8, &x[0], out, n) },
			func(ws []uint16, i, j int) float64 { return float64(x[j%256]) * float64(bf16(ws[i*256+j])) }},
		{"rowsT0", 64, func(w *uint16, stride, n int, out *[16]float32) { ladderRowsT0(w, stride, 1, &x[0], out, n) },
			func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*32+j])) }},
		{"rowsP", 64, func(w *uint16, stride, n int, out *[16]float32) { ladderRowsP(w, stride, 1, &x[0], out, n) },
			func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*32+j])) }},
		// pairs of rows of one step: x from its start each pair
		{"pairs", 64, func(w *uint16, stride, n int, out *[16]float32) { ladderPairs(w, stride, 1, &x[0], out, n, 64) },
			func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*32+j])) }},
		// four rows of 1024 columns (two blocks) a stream: one set
		{"blocks", 2048, func(w *uint16, stride, n int, out *[16]float32) {
			ladderBlocks(w, stride, &x[0], out, 1, 2048, 2, 1024-3*2048, 2048-1024)
		}, func(ws []uint16, i, j int) float64 { return float64(x[j]) * float64(bf16(ws[i*1024+j])) }},
		// one row of three steps: x walks on
		{"row", 64, func(w *uint16, stride, n int, out *[16]float32) { ladderRows(w, stride, n, &x[0], out, 1) },
			func(ws []uint16, i, j int) float64 { return float64(x[32*i+j]) * float64(bf16(ws[i*32+j])) }},
	} {
		per := k.step / 2 * steps // elements a stream
		stride := per + 96        // streams apart, not adjacent
		w := make([]uint16, 3*stride+per+1024)
		for i := range w {
			w[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
		}
		var out [16]float32
		k.run(&w[0], 2*stride, steps, &out)
		var got, want, mag float64
		for _, v := range out {
			got += float64(v)
		}
		for s := range 4 {
			ws := w[s*stride:]
			for i := range steps {
				for j := range k.step / 2 {
					v := k.term(ws, i, j)
					want += v
					mag += math.Abs(v)
				}
			}
		}
		if math.Abs(got-want) > 1e-5*mag {
			t.Errorf("%s: lanes sum to %v, want %v (products' magnitude %v)", k.name, got, want, mag)
		}
	}
}

// rawThreadCPU is threadCPU without the runtime's system call hand-off,
// during which the goroutine could move to another thread (a piece's
// start and end read on two threads' clocks).
func rawThreadCPU() float64 {
	var ts syscall.Timespec
	const threadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, threadCPUTime, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Nano()) / 1e9
}

// BenchmarkReadLadder runs the ladder between the read probe and the
// bfloat16 row kernel over decode's pieces of the 0.6B layers' bytes (16
// layers, 480 MB of bfloat16 in huge pages, each layer's products cut
// into four forks as decode cuts them: decodePieces over q/k/v, o,
// gate/up, down), each piece read as four streams of its quarters:
//
//	probe   readS4T1: 4 lines of a stream a step, each prefetched 1 KiB
//	        ahead into L2 (S4T1-1K)
//	probe2  the same again (the pairing's control)
//	fma     + one float32 FMA a line on the loaded line, x from L1, 16
//	        independent accumulators (ladderFMA)
//	widen   + fwdRowLong's bfloat16 widening (broadcast, byte shuffle)
//	        and two FMAs a line, x's chunks swapped (ladderWiden)
//	chains  + one accumulator chain a stream, as fwdRowLong's rows
//	        (ladderChains)
//	order   + fwdRowLong's step: a line of each stream, its constant
//	        prefetch displacement and indexed streams (ladderOrder)
//	rows    + fwdRowLong's rows: a loop a row, x from its start each row
//	        (ladderRows)
//	rows4   rows with four steps a loop iteration (ladderRows4)
//	rowsU   rows with x 4 bytes past a cache line's start
//	rowsX   rows with x's same two chunks each step (ladderRowsX)
//	rows8X  rows with x's first 1 KiB over and over, eight steps an
//	        iteration (ladderRows8X)
//	rowsS2  rows as two streams of halves (ladderRowsS2)
//	pairs   rows two at a time in each stream, x loaded once for eight
//	        lines (ladderPairs)
//	blocks  rows in column blocks of 512, rows 0-3 of a stream's set
//	        in turn for each block (ladderBlocks)
//	rowsT0  rows with each stream's line 256 bytes ahead also prefetched
//	        into L1 (ladderRowsT0)
//	rowsP   rows with x's lines prefetched 512 bytes ahead into L1
//	call    + a call and a reduction every four rows of a stream:
//	        fwdRowLongBF16 called as fwdRowsLong calls it
//	put     + putRow's copies of the outputs to y
//	long    fwdRowsLong a call per four rows (rowsLongOne false: the
//	        kernel selected through rowLongVariant)
//	one     fwdRowsLong<BF16> over the piece in one call (rowsLongOne)
//	oneT0   fwdRowsLongT0BF16: one, each stream's line 256 bytes ahead
//	        also prefetched into L1 (rowsLongT0)
//	multi2  two vectors, fwdRowMulti2BF16 a call per two rows of each
//	        stream and putRow's copies (fwdRowsMulti, rowsMultiOne false)
//	multi2one  two vectors, fwdRowsMulti2BF16 over the piece in one call
//	        (rowsMultiOne)
//
// Every round runs each fork of LADDER_BLOCKS blocks of as many layers as
// rungs, rung k on layer (k+round) mod rungs of the block (so no rung
// reads bytes another left in L3 and each reads every layer in turn), the
// rungs in a random order each fork. It prints each rung's rate over the
// probe's, per round from wall time and from the pieces' CPU time
// (thread CPU time), as the median, minimum and maximum over the rounds, beside each rung's median GB/s and the load average: on both
// cores through the worker pool (forkJoin) as decode runs them, then on
// one core (the pieces on the calling goroutine). LADDER_ROUNDS
// (default 101), LADDER_THREADS ("2,1"), LADDER_RUNGS (a comma list of
// names), LADDER_BASE (the rung the rates are over, default the first),
// LADDER_FORKS (fork numbers 1-4: q/k/v, o, gate/up, down; default all),
// LADDER_FAST (GB/s, default 40: the rounds whose probe read that
// fast are also given apart). Run with -benchtime 1x (or Nx: N ladders).
func BenchmarkReadLadder(b *testing.B) {
	if !fwdAsm {
		b.Skip("the ladder needs a CPU with AVX-512")
	}
	rounds := envInt("LADDER_ROUNDS", 101)
	defer func(o bool) { rowsLongOne = o }(rowsLongOne)
	rowsLongOne = false
	shapes := [][2]int{{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}}
	forks := [][2]int{{0, 3}, {3, 4}, {4, 6}, {6, 7}}
	x := make([]float32, 3072+16)
	r := newRNG(3)
	fill(x, r, 1)
	y := make([]float32, 3072)
	x2, y2 := make([]float32, 3072+16), make([]float32, 3072) // the multi rungs' second vector
	fill(x2, r, 1)
	xs, ys := [][]float32{x}, [][]float32{y}
	type piece = func(m mat, lo, hi int)
	// quarters runs k over the piece's four quarters as streams.
	quarters := func(step int, k func(w *uint16, stride, n int)) piece {
		return func(m mat, lo, hi int) {
			q := (hi - lo) / 4 * m.cols * 2
			k(&m.bf[lo*m.cols], q, q/step)
		}
	}
	var sink [16]float32
	var sink8 [8]uint64
	all := []ladderRung{
		{"probe", quarters(256, func(w *uint16, stride, n int) { readS4T1((*uint64)(unsafe.Pointer(w)), stride, n, 1024, &sink8) })},
		{"probe2", quarters(256, func(w *uint16, stride, n int) { readS4T1((*uint64)(unsafe.Pointer(w)), stride, n, 1024, &sink8) })},
		{"fma", quarters(256, func(w *uint16, stride, n int) { ladderFMA(w, stride, n, 1024, &x[0], &sink) })},
		{"widen", quarters(256, func(w *uint16, stride, n int) { ladderWiden(w, stride, n, 1024, &x[0], &sink) })},
		{"chains", quarters(256, func(w *uint16, stride, n int) { ladderChains(w, stride, n, 1024, &x[0], &sink) })},
		{"order", quarters(64, func(w *uint16, stride, n int) { ladderOrder(w, stride, n, &x[0], &sink) })},
		{"rows", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			ladderRows(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[0], &sink, q)
		}},
		{"rows4", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			ladderRows4(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[0], &sink, q)
		}},
		{"rowsU", func(m mat, lo, hi int) { // x 4 bytes off a cache line
			q := (hi - lo) / 4
			ladderRows(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[1], &sink, q)
		}},
		{"rowsX", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			ladderRowsX(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[0], &sink, q)
		}},
		{"rows8X", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			ladderRows8X(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[0], &sink, q)
		}},
		{"rowsS2", func(m mat, lo, hi int) {
			q := (hi - lo) / 2
			ladderRowsS2(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[0], &sink, q)
		}},
		{"pairs", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			ladderPairs(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[0], &sink, q, m.cols*2)
		}},
		{"blocks", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			if m.cols%512 != 0 {
				panic("ladderBlocks: columns not a multiple of 512")
			}
			rb, nb := m.cols*2, m.cols/512
			ladderBlocks(&m.bf[lo*m.cols], q*rb, &x[0], &sink, q/4, rb, nb, 1024-3*rb, rb-(nb-1)*1024)
		}},
		{"rowsT0", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			ladderRowsT0(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[0], &sink, q)
		}},
		{"rowsP", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			ladderRowsP(&m.bf[lo*m.cols], q*m.cols*2, m.cols/32, &x[0], &sink, q)
		}},
		{"call", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			for i := 0; i < q; i += 4 {
				fwdRowLongBF16(&x[0], &m.bf[(lo+i)*m.cols], m.cols, m.cols, q*m.cols, &sink)
			}
		}},
		{"put", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			var out [16]float32
			for i := 0; i < q; i += 4 {
				r := lo + i
				fwdRowLongBF16(&x[0], &m.bf[r*m.cols], m.cols, m.cols, q*m.cols, &out)
				for s := range 4 {
					putRow(y[r+s*q:r+s*q+4], out[4*s:4*s+4], false)
				}
			}
		}},
		{"long", func(m mat, lo, hi int) { fwdRowsLong(m, xs, ys, lo, hi, false) }},
		{"one", func(m mat, lo, hi int) { rowsLongCall(m, x, y, lo, (hi-lo)/4, false) }},
		{"oneT0", func(m mat, lo, hi int) {
			q := (hi - lo) / 4
			fwdRowsLongT0BF16(&x[0], &m.bf[lo*m.cols], m.cols, m.cols, q*m.cols, q, &y[lo], q, 0)
		}},
		{"multi2", func(m mat, lo, hi int) { // fwdRowsMulti's loop (rowsMultiOne false)
			q := (hi - lo) / 4
			var out [16]float32
			for i := 0; i < q; i += 2 {
				r := lo + i
				fwdRowMulti2BF16(&x[0], &x2[0], &m.bf[r*m.cols], m.cols, m.cols, q*m.cols, &out)
				for v, y := range [][]float32{y, y2} {
					for s := range 4 {
						o := 8*v + 2*s
						putRow(y[r+s*q:r+s*q+2], out[o:o+2], false)
					}
				}
			}
		}},
		{"multi2one", func(m mat, lo, hi int) { // rowsMultiOne
			rowsMultiCall(m, [3]*float32{&x[0], &x2[0]}, [][]float32{y, y2}, lo, (hi-lo)/4, false)
		}},
	}
	runLadder(b, "ladder", all, shapes, forks, rounds, func(sh [2]int, slab *hugeSlab) mat {
		w := hugeSlabAlloc[uint16](slab, sh[0]*sh[1])
		for i := range w {
			w[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
		}
		return mat{rows: sh[0], cols: sh[1], bf: w}
	}, func(g []mat) []rowPiece { return decodePieces(g, 16, 2) }, func(m mat) int { return 2 * m.rows * m.cols })
}

// ladderRung is one loop of a ladder: it reads rows [lo, hi) of m.
type ladderRung struct {
	name string
	run  func(m mat, lo, hi int)
}

// runLadder is the ladders' harness (BenchmarkReadLadder,
// BenchmarkT1Ladder): blocks of as many layers of the shapes (made by mk)
// as rungs, each fork's matrices cut by cut and counted by bytes; each
// round gives every rung its own layers, the rungs in a fresh random
// order each fork, and it prints each rung's rate over the base rung's
// (LADDER_BASE, default the first): medians and per-round min/max of
// wall and of the pieces' thread CPU time.
func runLadder(b *testing.B, label string, all []ladderRung, shapes, forks [][2]int, rounds int,
	mk func([2]int, *hugeSlab) mat, cut func([]mat) []rowPiece, bytesOf func(mat) int) {
	threads := envInts(b, "LADDER_THREADS", "2,1")
	fast := float64(envInt("LADDER_FAST", 40))
	if f := os.Getenv("LADDER_FORKS"); f != "" { // a subset, by index
		var sub [][2]int
		for _, i := range envInts(b, "LADDER_FORKS", f) {
			if i < 1 || i > len(forks) {
				b.Fatalf("LADDER_FORKS=%q: want fork numbers 1-%d (q/k/v, o, gate/up, down)", f, len(forks))
			}
			sub = append(sub, forks[i-1])
		}
		forks = sub
	}
	rungs := all[:0:0]
	want := os.Getenv("LADDER_RUNGS")
	for _, g := range all {
		if want == "" || slices.Contains(strings.Split(want, ","), g.name) {
			rungs = append(rungs, g)
		}
	}
	nr := len(rungs)
	// LADDER_BASE names the rung the others' rates are over (the first
	// by default): it goes first.
	if base := os.Getenv("LADDER_BASE"); base != "" {
		i := slices.IndexFunc(rungs, func(g ladderRung) bool { return g.name == base })
		if i < 0 {
			b.Fatalf("LADDER_BASE=%q: not one of the rungs", base)
		}
		rungs[0], rungs[i] = rungs[i], rungs[0]
	}
	blocks := envInt("LADDER_BLOCKS", 2)
	if nr < 2 || blocks < 1 {
		b.Fatalf("LADDER_RUNGS=%q LADDER_BLOCKS=%d: want two or more rungs and a block", want, blocks)
	}
	var slab hugeSlab
	type fork struct {
		ms     []mat
		pieces []rowPiece
		bytes  float64
	}
	var fs [][]fork // [layer][fork]
	for range blocks * nr {
		var ms []mat
		for _, sh := range shapes {
			ms = append(ms, mk(sh, &slab))
		}
		var lf []fork
		for _, f := range forks {
			g := ms[f[0]:f[1]]
			bytes := 0
			for _, m := range g {
				bytes += bytesOf(m)
			}
			lf = append(lf, fork{g, cut(g), float64(bytes)})
		}
		fs = append(fs, lf)
	}
	// runFork runs p over f's pieces and returns their CPU seconds, each
	// piece timed on the thread that runs it (threadCPU): the process's
	// clocks see the other thread's time only at its ticks, coarser than a
	// fork, and would count the idle worker's spin.
	cpus := make([]float64, 1024)
	odd := 0 // pieces whose thread changed under them (timed by wall)
	runFork := func(f fork, p func(mat, int, int), one bool) float64 {
		run := func(j int) {
			q := f.pieces[j]
			w0, c0 := wallClock(), rawThreadCPU()
			p(f.ms[q.w], q.lo, q.hi)
			cpus[j] = rawThreadCPU() - c0
			if w := wallClock() - w0; cpus[j] < 0 || cpus[j] > w+1e-4 {
				cpus[j] = w
				odd++
			}
		}
		if one {
			for j := range f.pieces {
				run(j)
			}
		} else {
			forkJoin(len(f.pieces), run)
		}
		c := 0.0
		for j := range f.pieces {
			c += cpus[j]
		}
		return c
	}
	perm := newRNG(7)
	for b.Loop() {
		for _, th := range threads {
			one := th == 1
			l0 := loadAvg()
			// per rung, per round: wall, CPU seconds and bytes
			wall, cpu := make([][]float64, nr), make([][]float64, nr)
			bytes := make([]float64, nr)
			for i := range rounds {
				tw, tc := make([]float64, nr), make([]float64, nr)
				var by []float64
				if i == 0 {
					by = bytes
				}
				for bl := range blocks {
					for f := range forks {
						// a fresh order each fork: a fixed rotation would
						// keep each rung behind the same one
						order := make([]int, nr)
						for o := range order {
							order[o] = o
						}
						for o := nr - 1; o > 0; o-- {
							j := int(perm.float64() * float64(o+1))
							order[o], order[j] = order[j], order[o]
						}
						for _, k := range order {
							fk := fs[bl*nr+(k+i)%nr][f]
							w0 := wallClock()
							c := runFork(fk, rungs[k].run, one)
							tw[k] += wallClock() - w0
							tc[k] += c
							if by != nil {
								by[k] += fk.bytes
							}
						}
					}
				}
				for k := range nr {
					wall[k], cpu[k] = append(wall[k], tw[k]), append(cpu[k], tc[k])
				}
			}
			fmt.Fprintf(os.Stderr, "%s %d core(s), %d rounds of %d blocks, load %s -> %s, %d pieces timed by wall: rate over %s's, wall med [min max] | cpu med [min max] | GB/s median (wall)\n",
				label, th, rounds, blocks, l0, loadAvg(), odd, rungs[0].name)
			odd = 0
			// the rounds whose probe read at fast GB/s or more, apart: the
			// host's fast phase, where the kernel's share is in question
			var fastR []int
			for i := range rounds {
				if bytes[0]/wall[0][i]/1e9 >= fast {
					fastR = append(fastR, i)
				}
			}
			for k := range nr {
				rw, rc := make([]float64, rounds), make([]float64, rounds)
				gbs := make([]float64, rounds)
				var sw0, swk, fw []float64
				for i := range rounds {
					rw[i], rc[i] = wall[0][i]/wall[k][i], cpu[0][i]/cpu[k][i]
					gbs[i] = bytes[k] / wall[k][i] / 1e9
					sw0, swk = append(sw0, wall[0][i]), append(swk, wall[k][i])
				}
				for _, i := range fastR {
					fw = append(fw, rw[i])
				}
				slices.Sort(rw)
				slices.Sort(rc)
				fastS := ""
				if len(fw) > 0 {
					slices.Sort(fw)
					fastS = fmt.Sprintf(" | %d rounds >= %.0f GB/s: wall %.3f [%.3f %.3f]", len(fw), fast, fw[len(fw)/2], fw[0], fw[len(fw)-1])
				}
				fmt.Fprintf(os.Stderr, "  %-9s wall %.3f [%.3f %.3f] pooled %.3f | cpu %.3f [%.3f %.3f] | %.1f GB/s%s\n",
					rungs[k].name, rw[rounds/2], rw[0], rw[rounds-1], sumOf(sw0)/sumOf(swk), rc[rounds/2], rc[0], rc[rounds-1], median(gbs), fastS)
				b.ReportMetric(rw[rounds/2], fmt.Sprintf("%s-%dc-wall", rungs[k].name, th))
			}
		}
	}
}

func sumOf(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
