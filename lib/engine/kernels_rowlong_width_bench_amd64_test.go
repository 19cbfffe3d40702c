//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"unsafe"
)

// BenchmarkRowLongWidth reads the same 0.6B layer shapes as bfloat16 and
// as float32 matrices (ROWLONG_LAYERS layers each, default 8, in huge
// pages) as decode's forks do (q/k/v, o, gate/up, down on the worker
// pool) four ways: the S4T1-1K read probe over each matrix in two fixed
// halves (its best case) and over decode's pieces (decodePieces), and
// fwdRowsLong over the pieces and over the halves. Every width and way
// reads each layer once a round, in an order rotated by round and layer.
// It prints the median GB/s of each, each way's rate over the halves
// probe's of its round (medians and lower quartiles), and bfloat16's rate
// over float32's a way: where decode's distance to the probe is, and
// whether a bfloat16 byte reads as fast as a float32 one;
// ROWLONG_THREADS=1 on one core. Run with -benchtime 1x.
func BenchmarkRowLongWidth(b *testing.B) {
	rounds, layers := envInt("ROWLONG_ROUNDS", 15), envInt("ROWLONG_LAYERS", 8)
	shapes := [][2]int{{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}}
	forks := [][2]int{{0, 3}, {3, 4}, {4, 6}, {6, 7}}
	var slab hugeSlab
	r := newRNG(5)
	var lb, lf [][][]mat // layer, fork, matrices
	for range layers {
		var mb, mf []mat
		for _, sh := range shapes {
			w := hugeSlabAlloc[uint16](&slab, sh[0]*sh[1])
			wf := hugeSlabAlloc[float32](&slab, sh[0]*sh[1])
			for i := range w {
				w[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
				wf[i] = bf16(w[i])
			}
			mb = append(mb, mat{rows: sh[0], cols: sh[1], bf: w})
			mf = append(mf, mat{rows: sh[0], cols: sh[1], data: wf})
		}
		var fb, ff [][]mat
		for _, f := range forks {
			fb, ff = append(fb, mb[f[0]:f[1]]), append(ff, mf[f[0]:f[1]])
		}
		lb, lf = append(lb, fb), append(lf, ff)
	}
	x := make([]float32, 3072)
	fill(x, r, 1)
	y := make([]float32, 3072)
	long := func(m mat, lo, hi int) {
		fwdRowsLong(m, [][]float32{x[:m.cols]}, [][]float32{y[:m.rows]}, lo, hi, false)
	}
	// longP is long with the paced kernel (the product's before).
	longP := func(m mat, lo, hi int) {
		defer func(v int) { rowLongVariant = v }(rowLongVariant)
		rowLongVariant = rowLongVariantIndex("A1KP")
		long(m, lo, hi)
	}
	probe := func(m mat, lo, hi int) {
		var p unsafe.Pointer
		var words int
		if m.bf != nil {
			p, words = unsafe.Pointer(&m.bf[lo*m.cols]), (hi-lo)*m.cols/4
		} else {
			p, words = unsafe.Pointer(&m.data[lo*m.cols]), (hi-lo)*m.cols/2
		}
		readStreamsSum(readS4T1, 4, 1024, unsafe.Slice((*uint64)(p), words))
	}
	oneThread := os.Getenv("ROWLONG_THREADS") == "1" // the calling goroutine alone
	// cuts: decode's pieces, or each matrix in two fixed halves (each
	// core one contiguous half, the probe's best case).
	halves := func(ms []mat) []rowPiece {
		var ps []rowPiece
		for i, m := range ms {
			h := m.rows / 2 &^ 15
			ps = append(ps, rowPiece{i, 0, h}, rowPiece{i, h, m.rows})
		}
		return ps
	}
	type kind struct {
		name  string
		piece func(m mat, lo, hi int)
		cut   func(ms []mat) []rowPiece
	}
	// fixed cuts each matrix into pieces of size bytes (whole 16 rows).
	fixed := func(size int) func(ms []mat) []rowPiece {
		return func(ms []mat) []rowPiece {
			var ps []rowPiece
			for i, m := range ms {
				bpr := m.cols * 2
				if m.bf == nil {
					bpr *= 2
				}
				rows := max(16, size/bpr&^15)
				for lo := 0; lo < m.rows; lo += rows {
					ps = append(ps, rowPiece{i, lo, min(lo+rows, m.rows)})
				}
			}
			return ps
		}
	}
	kinds := []kind{
		{"probe-halves", probe, halves},
		{"probe-pieces", probe, func(ms []mat) []rowPiece { return decodePieces(ms, 16, 2) }},
		{"long-pieces", long, func(ms []mat) []rowPiece { return decodePieces(ms, 16, 2) }},
		{"long-halves", long, halves},
		{"longP-pieces", longP, func(ms []mat) []rowPiece { return decodePieces(ms, 16, 2) }},
		{"longP-halves", longP, halves},
	}
	// ROWLONG_WHERE=sizes: the probe and the kernel over pieces of fixed
	// sizes instead (each piece's cost in time: the slope).
	if os.Getenv("ROWLONG_WHERE") == "sizes" {
		kinds = kinds[:1]
		for _, size := range []int{64 << 10, 256 << 10, 1 << 20} {
			kinds = append(kinds, kind{fmt.Sprintf("probe-%dK", size>>10), probe, fixed(size)}, kind{fmt.Sprintf("long-%dK", size>>10), long, fixed(size)})
		}
	}
	// layer runs k over every fork of one layer and returns the wall
	// seconds and bytes.
	layer := func(fs [][]mat, k kind) (secs, bytes float64) {
		w0 := wallClock()
		for _, ms := range fs {
			ps := k.cut(ms)
			if oneThread {
				for _, p := range ps {
					k.piece(ms[p.w], p.lo, p.hi)
				}
			} else {
				forkJoin(len(ps), func(j int) {
					p := ps[j]
					k.piece(ms[p.w], p.lo, p.hi)
				})
			}
			for _, m := range ms {
				bytes += float64(m.rows * m.cols * (2 + 2*btoi(m.bf == nil)))
			}
		}
		return wallClock() - w0, bytes
	}
	nk := len(kinds)
	for b.Loop() {
		l0 := loadAvg()
		// rate[w][k][round]: width w (0 bf16, 1 f32), kind k
		var rate [2][][]float64
		for w := range 2 {
			rate[w] = make([][]float64, nk)
		}
		for i := range rounds {
			var secs, bytes [2][]float64
			for w := range 2 {
				secs[w], bytes[w] = make([]float64, nk), make([]float64, nk)
			}
			for l := range layers {
				// every (width, kind) once a layer, in a rotated order
				for j := range 2 * nk {
					e := (j + i + l) % (2 * nk)
					w, k := e%2, e/2
					fs := lb[l]
					if w == 1 {
						fs = lf[l]
					}
					s, n := layer(fs, kinds[k])
					secs[w][k] += s
					bytes[w][k] += n
				}
			}
			for w := range 2 {
				for k := range nk {
					rate[w][k] = append(rate[w][k], bytes[w][k]/secs[w][k]/1e9)
				}
			}
		}
		// per round ratios: each kind over probe-halves of its width, and
		// bf16 over f32 per kind
		for w, wn := range []string{"bf16", "f32"} {
			line := fmt.Sprintf("%s GB/s med", wn)
			for k := range nk {
				line += fmt.Sprintf(" %s %.1f", kinds[k].name, median(rate[w][k]))
			}
			line += " | of probe-halves:"
			for k := 1; k < nk; k++ {
				var r []float64
				for i := range rounds {
					r = append(r, rate[w][k][i]/rate[w][0][i])
				}
				line += fmt.Sprintf(" %s %.3f (q1 %.3f)", kinds[k].name, median(r), quartileLow(r))
			}
			fmt.Fprintln(os.Stderr, line)
		}
		line := "bf16/f32 a byte:"
		for k := range nk {
			var r []float64
			for i := range rounds {
				r = append(r, rate[0][k][i]/rate[1][k][i])
			}
			line += fmt.Sprintf(" %s %.3f (q1 %.3f)", kinds[k].name, median(r), quartileLow(r))
		}
		fmt.Fprintf(os.Stderr, "%s | load %s -> %s\n", line, l0, loadAvg())
	}
}

// BenchmarkRowLongHot runs each long-stream kernel (rowLongKernels,
// ROWLONG_KERNELS a regexp) over a matrix that stays in L2
// (ROWLONG_HOT_ROWS rows of 1024, default 256: 512 KiB of bfloat16, and
// the same rows in float32 for "f32") on one thread, the kernels
// alternating each round: its pace when memory is not the limit, in GB/s
// of weights from the process CPU time (medians over ROWLONG_ROUNDS
// rounds). A kernel whose hot pace is near the phase's per-core read rate
// (28-30 GB/s a core in the host's fast phase) cannot keep up with it.
// Run with -benchtime 1x.
func BenchmarkRowLongHot(b *testing.B) {
	rounds, rows, reps := envInt("ROWLONG_ROUNDS", 15), envInt("ROWLONG_HOT_ROWS", 256), 64
	only := regexp.MustCompile(os.Getenv("ROWLONG_KERNELS"))
	const cols = 1024
	r := newRNG(9)
	wb := make([]uint16, rows*cols)
	wf := make([]float32, rows*cols)
	for i := range wb {
		wb[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
		wf[i] = bf16(wb[i])
	}
	x := make([]float32, cols)
	fill(x, r, 1)
	type run struct {
		name string
		f    func()
	}
	var runs []run
	q := rows / 4
	for _, k := range rowLongKernels {
		if !only.MatchString(k.name) {
			continue
		}
		var out [16]float32
		runs = append(runs, run{k.name + "-bf16", func() {
			for range reps {
				for i := 0; i < q; i += 4 {
					k.bf16(&x[0], &wb[i*cols], cols, cols, q*cols, &out)
				}
			}
		}}, run{k.name + "-f32", func() {
			for range reps {
				for i := 0; i < q; i += 4 {
					k.f32(&x[0], &wf[i*cols], cols, cols, q*cols, &out)
				}
			}
		}})
	}
	for b.Loop() {
		l0 := loadAvg()
		rates := make([][]float64, len(runs))
		for i := range rounds {
			for j := range runs {
				k := (j + i) % len(runs)
				c0 := processCPU()
				runs[k].f()
				size := 2
				if strings.HasSuffix(runs[k].name, "f32") {
					size = 4
				}
				rates[k] = append(rates[k], float64(reps*rows*cols*size)/(processCPU()-c0)/1e9)
			}
		}
		line := "hot GB/s (CPU):"
		for k, rn := range runs {
			line += fmt.Sprintf(" %s %.1f", rn.name, median(rates[k]))
		}
		fmt.Fprintf(os.Stderr, "%s | load %s -> %s\n", line, l0, loadAvg())
	}
}
