//go:build goexperiment.simd && amd64 && linux

package engine

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// BenchmarkT1Ladder is BenchmarkReadLadder for the --bf16-compute decode's
// one-token products: the rungs from the read probe to the real call path
// over the packed (VNNI) copies of the 0.6B layers' products (16 layers,
// 480 MB in huge pages), each layer's products cut as the fused fork cuts
// them (decodeCut, 16-row alignment, per phase: q/k/v, o, gate/up, down):
//
//	probe    readS4T1 over the piece's bytes as four quarter-streams, 4
//	         lines of each a step, prefetched 1 KiB ahead into L2
//	probe2   the same again (the pairing's control)
//	probeBlk readS4T1 over four VNNI blocks at a time (the kernel's
//	         streams: a block a stream, a call every four blocks)
//	kern     avxBF16T1N6 (edges N1-N5) called directly a six blocks at a
//	         time, sums straight into y
//	kernX    avxBF16T1N6X (each line six blocks on prefetched, the next
//	         call's; no prefetch within a block), edges as kern
//	group    bf16GroupAVX over the piece (the kernel's Go loop)
//	rows     bf16Rows (the chunk loop, the pooled sums: the call the
//	         fused fork's pieces make)
//
// T1LADDER_ROUNDS (default 51), LADDER_THREADS ("2,1"), LADDER_RUNGS,
// LADDER_FORKS as BenchmarkReadLadder. Run with -benchtime 1x.
func BenchmarkT1Ladder(b *testing.B) {
	if !bf16Compute() || bf16UseAMX() {
		b.Skip("the one-token AVX512-BF16 kernels: this CPU runs AMX")
	}
	shapes := [][2]int{{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}}
	forks := [][2]int{{0, 3}, {3, 4}, {4, 6}, {6, 7}}
	r := newRNG(3)
	// x packed once a width, as the fork's phases pack it
	xbs := map[int][]uint16{}
	for _, c := range []int{1024, 2048, 3072} {
		x := make([]float32, c)
		fill(x, r, 1)
		var pp []uint16
		xbs[c] = packBF16Rows([][]float32{x}, c, &pp)
	}
	y := make([]float32, 3072)
	ys := [][]float32{y}
	var sink8 [8]uint64
	// kernLoop runs the one-token kernels over blocks [b, b+nb) of m, six
	// at a time (ks[6]), the edge's kernel last, sums to y from row 16b.
	kernLoop := func(m mat, lo, hi int, six func(x *uint16, ldx int, w *uint16, wstride int, kp int, out *float32, ldo int)) {
		kp := bf16Cols(m.cols)
		ws := 16 * kp
		xb := xbs[m.cols]
		for j := lo / 16; j < hi/16; j += 6 {
			nn := min(6, hi/16-j)
			k := avxBF16T1Variants[0][nn]
			if nn == 6 {
				k = six
			}
			k(&xb[0], 2*bf16Pitch(m.cols), &m.vn[j*ws], 2*ws, kp/2, &y[16*j], 4*3072)
		}
	}
	rungs := []ladderRung{
		{"probe", func(m mat, lo, hi int) {
			q := (hi - lo) / 4 * bf16Cols(m.cols) * 2
			readS4T1((*uint64)(unsafe.Pointer(&m.vn[lo*bf16Cols(m.cols)])), q, q/256, 1024, &sink8)
		}},
		{"probe2", func(m mat, lo, hi int) {
			q := (hi - lo) / 4 * bf16Cols(m.cols) * 2
			readS4T1((*uint64)(unsafe.Pointer(&m.vn[lo*bf16Cols(m.cols)])), q, q/256, 1024, &sink8)
		}},
		{"probeBlk", func(m mat, lo, hi int) {
			kp := bf16Cols(m.cols)
			bb := 32 * kp // a block's bytes
			j := lo / 16
			for ; j+4 <= hi/16; j += 4 {
				readS4T1((*uint64)(unsafe.Pointer(&m.vn[j*16*kp])), bb, bb/256, 1024, &sink8)
			}
			for ; j < hi/16; j++ {
				readS1T1((*uint64)(unsafe.Pointer(&m.vn[j*16*kp])), bb, bb/256, 1024, &sink8)
			}
		}},
		{"kern", func(m mat, lo, hi int) { kernLoop(m, lo, hi, avxBF16T1N6) }},
		{"kernX", func(m mat, lo, hi int) { kernLoop(m, lo, hi, avxBF16T1N6X) }},
		{"group", func(m mat, lo, hi int) {
			kp := bf16Cols(m.cols)
			bf16GroupAVX(xbs[m.cols], bf16Pitch(m.cols), 1, m.vn[lo*kp:], 16*kp, kp, (hi-lo)/16, &y[lo], 3072)
		}},
		{"rows", func(m mat, lo, hi int) { bf16Rows(m, xbs[m.cols], 1, ys, lo, hi, false) }},
	}
	runLadderT1(b, rungs, shapes, forks, envInt("T1LADDER_ROUNDS", 51), func(sh [2]int, slab *hugeSlab) mat {
		vn := hugeSlabAlloc[uint16](slab, sh[0]*bf16Cols(sh[1]))
		for i := range vn {
			vn[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
		}
		return mat{rows: sh[0], cols: sh[1], vn: vn}
	})
}

type ladderRung struct {
	name string
	run  func(m mat, lo, hi int)
}

// runLadderT1 is BenchmarkReadLadder's harness over mats made by mk and
// cut as the fused fork cuts them (decodeCut, 16-row alignment): each
// round gives each rung its own layers, the rungs in a fresh random order
// each fork, and prints each rung's rate over the first rung's (medians
// and per-round min/max of wall and of the pieces' thread CPU time).
func runLadderT1(b *testing.B, all []ladderRung, shapes, forks [][2]int, rounds int, mk func([2]int, *hugeSlab) mat) {
	threads := envInts(b, "LADDER_THREADS", "2,1")
	fast := float64(envInt("LADDER_FAST", 40))
	if f := os.Getenv("LADDER_FORKS"); f != "" {
		var sub [][2]int
		for _, i := range envInts(b, "LADDER_FORKS", f) {
			if i < 1 || i > len(forks) {
				b.Fatalf("LADDER_FORKS=%q: want fork numbers 1-%d", f, len(forks))
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
	var fs [][]fork
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
				bytes += 2 * m.rows * bf16Cols(m.cols)
			}
			lf = append(lf, fork{g, decodeCut(nil, g, 16, 2), float64(bytes)})
		}
		fs = append(fs, lf)
	}
	cpus := make([]float64, 1024)
	odd := 0
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
			wall, cpu := make([][]float64, nr), make([][]float64, nr)
			bytes := make([]float64, nr)
			for i := range rounds {
				tw, tc := make([]float64, nr), make([]float64, nr)
				for bl := range blocks {
					for f := range forks {
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
							if i == 0 {
								bytes[k] += fk.bytes
							}
						}
					}
				}
				for k := range nr {
					wall[k], cpu[k] = append(wall[k], tw[k]), append(cpu[k], tc[k])
				}
			}
			fmt.Fprintf(os.Stderr, "t1ladder %d core(s), %d rounds of %d blocks, load %s -> %s, %d pieces timed by wall: rate over %s's, wall med [min max] | cpu med [min max] | GB/s median (wall)\n",
				th, rounds, blocks, l0, loadAvg(), odd, rungs[0].name)
			odd = 0
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
				fmt.Fprintf(os.Stderr, "  %-8s wall %.3f [%.3f %.3f] pooled %.3f | cpu %.3f [%.3f %.3f] | %.1f GB/s%s\n",
					rungs[k].name, rw[rounds/2], rw[0], rw[rounds-1], sumOf(sw0)/sumOf(swk), rc[rounds/2], rc[0], rc[rounds-1], median(gbs), fastS)
				b.ReportMetric(rw[rounds/2], fmt.Sprintf("%s-%dc-wall", rungs[k].name, th))
			}
		}
	}
}
