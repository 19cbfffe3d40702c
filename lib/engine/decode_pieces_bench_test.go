package engine

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkDecodePieces splits the distance between decode's products
// (BenchmarkDecodeGap's mats: decodePieces claimed on the worker pool, a
// fork a product, 113 a token) and the row kernel over whole matrices
// in fixed halves (the arrangement that read 0.85-0.94 of the probes on
// branch decodestreams). Token by token on the 0.6B shape's bfloat16
// matrices, each variant in turn (in a fresh random order each token), it times:
//
//   - mats: the products as decode runs them (matMulGroup, matMul);
//   - dec: the same forks and pieces, cut once before the tokens (the
//     control for the variants below, which cut theirs once too);
//   - fd: forkDecode on each group, its pieces cut per call as decode's;
//   - halves1: one fork of two indices, each core its contiguous half of
//     every matrix in order (no barrier between products);
//   - halvesF: a fork a product as decode's, each core one contiguous
//     half of each matrix (fixed, not claimed);
//   - huge: decode's forks on pieces of about 2 MiB (whole 16-row blocks);
//   - coarse: decode's forks with a quarter of what is left a piece;
//   - pf: decode's forks plus one last index that reads the first
//     pfBytes of the next fork's matrices (plain loads, the probe's
//     variant), claimed by the core that runs out of pieces first;
//   - pool / halfprobe: the token's bytes read by the fastest probe
//     variant on 2 MiB pool pieces (poolRead) and in fixed halves
//     (bandwidthOver).
//
// It reports the medians of each variant's time over mats' (wall, and
// process CPU), below 100 faster.
func BenchmarkDecodePieces(b *testing.B) {
	d := newDecodeBench(b)
	m, bytes := d.m, d.bytes
	const tokens = 32
	xh, xq, xi := d.xh, d.xq, d.xi
	q, k, v, o, g, u, dn, lg := d.q, d.k, d.v, d.o, d.g, d.u, d.dn, d.lg
	type group struct {
		ms  []mat
		xs  [][]float32
		yss [][][]float32
	}
	var groups []group
	for li := range m.w.layers {
		l := &m.w.layers[li]
		groups = append(groups,
			group{[]mat{l.q, l.k, l.v}, xh, [][][]float32{q, k, v}},
			group{[]mat{l.o}, xq, [][][]float32{o}},
			group{[]mat{l.gate, l.up}, xh, [][][]float32{g, u}},
			group{[]mat{l.down}, xi, [][][]float32{dn}})
	}
	groups = append(groups, group{[]mat{m.w.lmHead}, xh, [][][]float32{lg}})
	mats := d.mats
	half := func(w mat, i int) (int, int) {
		mid := (w.rows/2 + 15) &^ 15
		if i == 0 {
			return 0, mid
		}
		return mid, w.rows
	}
	halves1 := func() {
		forkJoin(2, func(i int) {
			for _, gr := range groups {
				for wi, w := range gr.ms {
					lo, hi := half(w, i)
					matRows(w, gr.xs, gr.yss[wi], lo, hi, false)
				}
			}
		})
	}
	halvesF := func() {
		for _, gr := range groups {
			forkJoin(2, func(i int) {
				for wi, w := range gr.ms {
					lo, hi := half(w, i)
					matRows(w, gr.xs, gr.yss[wi], lo, hi, false)
				}
			})
		}
	}
	// Pieces per group, cut once (decode cuts them per call; the cut is
	// a few hundred ns).
	cutWith := func(cut func(ms []mat) []rowPiece) [][]rowPiece {
		var pss [][]rowPiece
		for _, gr := range groups {
			pss = append(pss, cut(gr.ms))
		}
		return pss
	}
	hugeCut := func(ms []mat) []rowPiece {
		var ps []rowPiece
		for i, w := range ms {
			rows := max(16, (1<<20/w.cols+8)&^15) // 2 MiB of bfloat16
			for lo := 0; lo < w.rows; lo += rows {
				ps = append(ps, rowPiece{i, lo, min(lo+rows, w.rows)})
			}
		}
		return ps
	}
	forksOn := func(pss [][]rowPiece) func() {
		return func() {
			for gi, gr := range groups {
				ps := pss[gi]
				forkJoin(len(ps), func(i int) {
					p := ps[i]
					matRows(gr.ms[p.w], gr.xs, gr.yss[p.w], p.lo, p.hi, false)
				})
			}
		}
	}
	huge := forksOn(cutWith(hugeCut))
	coarse := forksOn(cutWith(func(ms []mat) []rowPiece { return cutPieces(nil, ms, 16, 4, decodeMinPiece) }))
	dec := cutWith(func(ms []mat) []rowPiece { return decodePieces(ms, 16, 2) })
	ps, bufs := readProbes(), decodeMatrixWords(m)
	bws := variantReads(ps, bufs)
	top := fastestVariants(ps, bws, 1)[0]
	const pfBytes = 256 << 10
	var sink uint64
	pf := func() {
		for gi, gr := range groups {
			ps := dec[gi]
			var next []uint64
			if gi+1 < len(groups) {
				w := groups[gi+1].ms[0]
				n := min(len(w.vn), pfBytes/2) / 4 &^ 255
				next = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(w.vn))), n)
			}
			forkJoin(len(ps)+1, func(i int) {
				if i == len(ps) {
					if next != nil {
						sink += top.read(next)
					}
					return
				}
				p := ps[i]
				matRows(gr.ms[p.w], gr.xs, gr.yss[p.w], p.lo, p.hi, false)
			})
		}
	}
	// pieces1: decode's pieces, every group's in turn, in one fork (no
	// barrier; BenchmarkDecodeGap's samepieces).
	type gp struct{ g, w, lo, hi int }
	var all []gp
	for gi, ps := range dec {
		for _, p := range ps {
			all = append(all, gp{gi, p.w, p.lo, p.hi})
		}
	}
	pieces1 := func() {
		forkJoin(len(all), func(i int) {
			p := all[i]
			gr := groups[p.g]
			matRows(gr.ms[p.w], gr.xs, gr.yss[p.w], p.lo, p.hi, false)
		})
	}
	// halvesL: fixed halves, a fork a layer (29 forks instead of 113).
	halvesL := func() {
		for g0 := 0; g0 < len(groups); g0 += 4 {
			forkJoin(2, func(i int) {
				for _, gr := range groups[g0:min(g0+4, len(groups))] {
					for wi, w := range gr.ms {
						lo, hi := half(w, i)
						matRows(w, gr.xs, gr.yss[wi], lo, hi, false)
					}
				}
			})
		}
	}
	pool := func() { poolRead(top.read, bufs) }
	halfprobe := func() { bandwidthOver(top.read, bufs, 1) }
	fd := func() {
		for _, gr := range groups {
			forkDecode(gr.ms, gr.xs, gr.yss, 2, false)
		}
	}
	names := []string{"mats", "dec", "fd", "halves1", "halvesF", "halvesL", "pieces1", "huge", "coarse", "pf", "pool", "halfprobe"}
	runs := []func(){mats, forksOn(dec), fd, halves1, halvesF, halvesL, pieces1, huge, coarse, pf, pool, halfprobe}
	wall := make([][]float64, len(runs))
	cpu := make([][]float64, len(runs))
	var matsGBs []float64
	tok := 0
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		for range tokens {
			tok++
			var tw, tc [12]float64
			// A fresh order each token: a fixed rotation would keep each
			// variant behind the same one (the pool's spin budget and the
			// caches carry over).
			for _, i := range rng.Perm(len(runs)) {
				c0, t0 := processCPU(), time.Now()
				runs[i]()
				tw[i], tc[i] = time.Since(t0).Seconds(), processCPU()-c0
			}
			for i := range runs {
				wall[i] = append(wall[i], 100*tw[i]/tw[0])
				cpu[i] = append(cpu[i], 100*tc[i]/tc[0])
			}
			matsGBs = append(matsGBs, bytes/tw[0]/1e9)
		}
	}
	_ = sink
	b.ReportMetric(median(matsGBs), "GB/s-mats")
	for i := 1; i < len(runs); i++ {
		b.ReportMetric(median(wall[i]), "%"+names[i]+"-of-mats")
		b.ReportMetric(median(cpu[i]), "%cpu-"+names[i]+"-of-mats")
		w := append([]float64(nil), wall[i]...)
		sort.Float64s(w)
		b.ReportMetric(w[len(w)/10], "%p10-"+names[i]+"-of-mats")
	}
}
