package engine

import (
	"fmt"
	"math"
	"runtime"
	"testing"
)

// TestForwardLanesAVX2MatchesDotForm requires the lane-form product
// (fwdLanesRows, called directly so that every M runs it) to give the
// dot-form tiles' bits (fwd2Rows with fwdLanes off) on shapes that leave
// every edge over: columns that are not a multiple of 16, of the column
// piece within a call or of the panel's column block (small ones as well
// as the defaults), rows that are not a multiple of 8 or 24, a row range
// that starts past 0, M = 1…9, 64 and 130 (partial groups: the sums go
// through out and putRow, whole tiles straight into the rows), float32
// and bfloat16 weights, accumulating or not.
func TestForwardLanesAVX2MatchesDotForm(t *testing.T) {
	defer func(on bool, piece, block int, planes bool, pg, pb int) {
		fwdLanes, fwdLanesPiece, fwdLanesBlock, fwdLanesPlanes, fwdLanesPlaneGroups, fwdLanesPlaneBlock = on, piece, block, planes, pg, pb
	}(fwdLanes, fwdLanesPiece, fwdLanesBlock, fwdLanesPlanes, fwdLanesPlaneGroups, fwdLanesPlaneBlock)
	withAVX2(t, func() {
		shapes := [][2]int{{1, 1}, {5, 15}, {8, 16}, {23, 17}, {24, 33}, {25, 100}, {49, 64}, {67, 1040}, {30, 2100}}
		ms := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 64, 130}
		for _, sh := range shapes {
			for _, m := range ms {
				// Under qemu: every shape at M = 1, 5 and 9, the small ones
				// at 64 too.
				if emulated() && m != 1 && m != 5 && m != 9 && (m != 64 || sh[0]*sh[1] > 1<<12) {
					continue
				}
				w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*3000+sh[1]+m))
				p := newFwdPack(xs, sh[1], false)
				for _, mm := range []mat{w, wb} {
					for _, acc := range []bool{false, true} {
						for _, pb := range [][2]int{{3, 0}, {64, 0}, {3, 2}, {64, 64}, {2, 5}} {
							piece, block := pb[0], pb[1]
							for _, lo := range []int{0, sh[0] / 3} {
								name := fmt.Sprintf("%dx%d M=%d bf16=%v acc=%v piece=%d block=%d lo=%d", sh[0], sh[1], m, mm.bf != nil, acc, piece, block, lo)
								want := startRows(m, sh[0])
								fwdLanes = false
								fwd2Rows(mm, p.xp, want, lo, sh[0], acc)
								got := startRows(m, sh[0])
								fwdLanesPiece, fwdLanesBlock = piece, block
								fwdLanesPlanes = false
								fwdLanesRows(mm, p.xp, got, lo, sh[0], acc)
								for b := range got {
									if !sameBits(got[b], want[b]) {
										t.Fatalf("%s: vector %d differs from the dot-form tiles", name, b)
									}
								}
								// The lane planes (fwdLanesPlanes), every
								// group in one call and a few at a time,
								// copied for the call and given
								// (fwdLanesPlanesShared), their panels'
								// column block the lanes'.
								fwdLanesPlaneBlock = block
								for _, pg := range []int{0, 3} {
									fwdLanesPlaneGroups = pg
									got := startRows(m, sh[0])
									fwdLanesPlaneRows(mm, p.xp, got, lo, sh[0], acc)
									groups := (m + 3) / 4
									xl := make([]float32, lanePlanesLen(sh[1], groups))
									lanePlanesCopy(p.xp, xl, sh[1], groups, 0, groups)
									given := startRows(m, sh[0])
									fwdLanesRowsOn(mm, p.xp, xl, given, lo, sh[0], acc)
									for b := range got {
										if !sameBits(got[b], want[b]) {
											t.Fatalf("%s planes groups=%d: vector %d differs from the dot-form tiles", name, pg, b)
										}
										if !sameBits(given[b], want[b]) {
											t.Fatalf("%s given planes groups=%d: vector %d differs from the dot-form tiles", name, pg, b)
										}
									}
								}
							}
						}
					}
				}
				p.release()
			}
		}
	})
}

// TestForwardLanesAVX2PanelMatchesScalar requires the packing kernels'
// panel of chunks [c0, c1) to hold w[j+r][16c+l] at (l·(c1-c0) + c-c0)·8v
// + r, zero past the rows and columns, as fwdLanesPanel's own loop writes
// it for rows it packs alone.
func TestForwardLanesAVX2PanelMatchesScalar(t *testing.T) {
	withAVX2(t, func() {
		for _, sh := range [][2]int{{8, 16}, {24, 48}, {20, 37}, {17, 1}} {
			w, wb, _ := fwdCase(sh[0]+3, sh[1], 1, uint64(sh[0]+sh[1]))
			for _, mm := range []mat{w, wb} {
				v := (sh[0] + 7) / 8
				kp := (sh[1] + 15) / 16
				for c0 := range min(2, kp) {
					kc := kp - c0
					p := make([]float32, 16*kc*8*v)
					for i := range p {
						p[i] = -1
					}
					fwdLanesPanel(mm, 2, sh[0], v, c0, kp, p)
					for l := range 16 {
						for c := range kc {
							for r := range 8 * v {
								var want float32
								if k := 16*(c0+c) + l; r < sh[0] && k < sh[1] {
									want = fwdLanesWeight(mm, (2+r)*sh[1]+k)
								}
								if got := p[(l*kc+c)*8*v+r]; !sameBits([]float32{got}, []float32{want}) {
									t.Fatalf("%dx%d bf16=%v c0=%d: lane %d chunk %d row %d is %v, want %v", sh[0], sh[1], mm.bf != nil, c0, l, c, r, got, want)
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestForwardLanesAVX2NaNPayloads requires the lane tiles to return the
// dot form's NaN where a weight, a vector element and an output row hold
// NaNs of different payloads at the same place: x86 returns one operand's
// NaN, so the FMA's and the add's operand order must be the dot form's.
func TestForwardLanesAVX2NaNPayloads(t *testing.T) {
	defer func(on bool) { fwdLanes = on }(fwdLanes)
	nan := func(payload uint32) float32 { return math.Float32frombits(0x7fc00000 | payload) }
	withAVX2(t, func() {
		const rows, cols, m = 48, 100, 8
		w, _, xs := fwdCase(rows, cols, m, 11)
		w.data[5*cols+7] = nan(1)
		xs[2][7] = nan(2)
		xs[3][7] = nan(3)
		w.data[30*cols+7] = nan(4)
		p := newFwdPack(xs, cols, false)
		defer p.release()
		for _, acc := range []bool{false, true} {
			want, got := startRows(m, rows), startRows(m, rows)
			for _, y := range [][][]float32{want, got} {
				y[2][5], y[3][30] = nan(5), nan(6)
			}
			planes := startRows(m, rows)
			planes[2][5], planes[3][30] = nan(5), nan(6)
			fwdLanes = false
			fwd2Rows(w, p.xp, want, 0, rows, acc)
			fwdLanesRows(w, p.xp, got, 0, rows, acc)
			fwdLanesPlaneRows(w, p.xp, planes, 0, rows, acc)
			for b := range got {
				if !sameBits(got[b], want[b]) {
					t.Fatalf("acc=%v: vector %d differs from the dot-form tiles", acc, b)
				}
				if !sameBits(planes[b], want[b]) {
					t.Fatalf("acc=%v: vector %d differs from the dot-form tiles with the lane planes", acc, b)
				}
			}
		}
	})
}

// TestForwardLanesAVX2SharedPlanesSameBits requires a product split over
// two workers as matMulSlices splits it to give the same bits with the
// lane planes copied once for the pack (fwdLanesPlanesShared) as without,
// and two products on one pack (q and k) to share the planes: pieces of
// 24 rows or more, columns with a tail and over several of the planes'
// column blocks, float32 and bfloat16, accumulating or not, with and
// without fwdLanesPlanePrefetch.
func TestForwardLanesAVX2SharedPlanesSameBits(t *testing.T) {
	defer func(on, shared bool, pb, pg int, pf bool) {
		fwdLanes, fwdLanesPlanesShared, fwdLanesPlaneBlock, fwdLanesPlaneGroups, fwdLanesPlanePrefetch = on, shared, pb, pg, pf
	}(fwdLanes, fwdLanesPlanesShared, fwdLanesPlaneBlock, fwdLanesPlaneGroups, fwdLanesPlanePrefetch)
	defer func(c int) { fwdLanesPlaneMinCols = c }(fwdLanesPlaneMinCols)
	fwdLanes, fwdLanesPlaneMinCols = true, 1
	withAVX2(t, func() {
		for _, sh := range [][2]int{{400, 100}, {390, 1040}, {400, 2100}} {
			for _, m := range []int{130, 257} {
				if emulated() && (m != 130 || sh[1] > 1040) {
					continue
				}
				w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]+sh[1]+m))
				w2, _, _ := fwdCase(sh[0]/2, sh[1], 1, uint64(sh[1]+7))
				for _, mm := range []mat{w, wb} {
					for _, acc := range []bool{false, true} {
						for _, cfg := range [][3]int{{0, 8, 1}, {2, 3, 1}, {0, 8, 0}} {
							fwdLanesPlaneBlock, fwdLanesPlaneGroups, fwdLanesPlanePrefetch = cfg[0], cfg[1], cfg[2] == 1
							name := fmt.Sprintf("%dx%d M=%d bf16=%v acc=%v block=%d groups=%d prefetch=%v", sh[0], sh[1], m, mm.bf != nil, acc, cfg[0], cfg[1], cfg[2] == 1)
							run := func(shared bool) (y, y2 [][]float32) {
								fwdLanesPlanesShared = shared
								y, y2 = startRows(m, mm.rows), startRows(m, w2.rows)
								p, ok := packForward(mm, xs)
								if !ok {
									t.Fatalf("%s: the batch was not packed", name)
								}
								defer p.release()
								for _, pr := range []struct {
									w mat
									y [][]float32
								}{{mm, y}, {w2, y2}} {
									p.lanePlanesFor(pr.w, m, 2)
									if shared && p.lanePlanes(pr.w, m) == nil {
										t.Fatalf("%s: no lane planes for the pieces", name)
									}
									forkRows(pr.w.rows, 6, 2, func(lo, hi int) { p.rows(pr.w, xs, pr.y, lo, hi, acc) })
								}
								return y, y2
							}
							want, want2 := run(false)
							got, got2 := run(true)
							for b := range got {
								if !sameBits(got[b], want[b]) || !sameBits(got2[b], want2[b]) {
									t.Fatalf("%s: vector %d differs with the shared lane planes", name, b)
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestForwardLanesAVX2FoldSameBits requires a LoRA layer's product with
// B·t added group by group in the lane planes (fwdLanesFold, lanesFoldOn)
// to give the bits of W's product followed by B's (fwdLanesFold off):
// W's columns with and without a tail, B's rank 32 and 20 (a tail), rows
// whose last worker piece is too small for the lane tiles (400) or whose
// last panel is short (390), M with a partial group, float32 and
// bfloat16 W and B, accumulating or not, a NaN in t and in an output row.
func TestForwardLanesAVX2FoldSameBits(t *testing.T) {
	defer func(on, fold bool, c int) { fwdLanes, fwdLanesFold, fwdLanesPlaneMinCols = on, fold, c }(fwdLanes, fwdLanesFold, fwdLanesPlaneMinCols)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	fwdLanes, fwdLanesPlaneMinCols = true, 1
	withAVX2(t, func() {
		for _, sh := range [][3]int{{400, 100, 32}, {390, 1040, 32}, {400, 1024, 20}} {
			for _, m := range []int{130, 257} {
				if emulated() && (m != 130 || sh[1] > 1040) {
					continue
				}
				w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]+sh[1]+m))
				b, bb, ts := fwdCase(sh[0], sh[2], m, uint64(sh[2]+m))
				ts[5][3] = float32(math.NaN())
				for _, mm := range [][2]mat{{w, b}, {wb, bb}} {
					for _, acc := range []bool{false, true} {
						name := fmt.Sprintf("%dx%d B %d M=%d bf16=%v acc=%v", sh[0], sh[1], sh[2], m, mm[0].bf != nil, acc)
						run := func(fold bool) [][]float32 {
							fwdLanesFold = fold
							y := startRows(m, sh[0])
							y[7][sh[0]-1] = float32(math.Inf(1))
							p, ok := packForward(mm[0], xs)
							if !ok {
								t.Fatalf("%s: the batch was not packed", name)
							}
							defer p.release()
							if fold && !lanesFoldOn(p, mm[0], xs, y, mm[1], ts, acc) {
								t.Fatalf("%s: the fold did not take the product", name)
							}
							if !fold {
								matMulFoldOn(p, mm[0], xs, y, mm[1], ts, acc)
							}
							return y
						}
						want, got := run(false), run(true)
						for i := range got {
							if !sameBits(got[i], want[i]) {
								t.Fatalf("%s: vector %d differs with B folded into the lane planes", name, i)
							}
						}
					}
				}
			}
		}
	})
}

// TestForwardLanesAVX2Align24SameBits requires a product split over two
// workers into pieces of a multiple of 24 rows (fwdLanesAlign24) to be
// cut so and to give the bits of pieces of a multiple of 6: rows that
// leave a last piece too small for the lane tiles (1024 at 72 a piece),
// a short last panel (400, 2048), columns with a tail, float32 and
// bfloat16, accumulating or not; a LoRA A's 32 rows keep pieces of 6.
func TestForwardLanesAVX2Align24SameBits(t *testing.T) {
	defer func(on, a bool) { fwdLanes, fwdLanesAlign24 = on, a }(fwdLanes, fwdLanesAlign24)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	fwdLanes = true
	withAVX2(t, func() {
		for _, sh := range [][2]int{{400, 100}, {1024, 1040}, {2048, 1024}} {
			for _, m := range []int{130, 257} {
				if emulated() && (m != 130 || sh[0]*sh[1] > 1<<19) {
					continue
				}
				w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]+sh[1]+m))
				for _, mm := range []mat{w, wb} {
					for _, acc := range []bool{false, true} {
						name := fmt.Sprintf("%dx%d M=%d bf16=%v acc=%v", sh[0], sh[1], m, mm.bf != nil, acc)
						run := func(align24 bool) [][]float32 {
							fwdLanesAlign24 = align24
							y := startRows(m, sh[0])
							p, ok := packForward(mm, xs)
							if !ok {
								t.Fatalf("%s: the batch was not packed", name)
							}
							defer p.release()
							if c := rowChunk(sh[0], p.rowAlign(sh[0], m, 2), 2); align24 && c%24 != 0 {
								t.Fatalf("%s: pieces of %d rows, want a multiple of 24", name, c)
							}
							if a := p.rowAlign(32, m, 2); a != 6 {
								t.Fatalf("%s: a LoRA A's 32 rows aligned to %d, want 6 (dot-form pieces)", name, a)
							}
							matMulSlices(p, mm, xs, y, acc, 2)
							return y
						}
						want, got := run(false), run(true)
						for i := range got {
							if !sameBits(got[i], want[i]) {
								t.Fatalf("%s: vector %d differs with pieces of 24 rows", name, i)
							}
						}
					}
				}
			}
		}
	})
}

// TestForwardLanesAVX2OutPrefetchSameBits requires the lane planes with
// the trees prefetching later groups' output lines (fwdLanesOutPrefetch)
// to give the dot form's bits: blocks of 3 groups and of all of them (the
// prefetch wrapping to the next panel), a last panel short of 24 rows, a
// partial last group, accumulating or not.
func TestForwardLanesAVX2OutPrefetchSameBits(t *testing.T) {
	defer func(on, pf bool, pg, pr int) {
		fwdLanes, fwdLanesOutPrefetch, fwdLanesPlaneGroups, fwdLanesOutPrefetchRows = on, pf, pg, pr
	}(fwdLanes, fwdLanesOutPrefetch, fwdLanesPlaneGroups, fwdLanesOutPrefetchRows)
	fwdLanesOutPrefetchRows = 1
	withAVX2(t, func() {
		for _, sh := range [][2]int{{100, 1040}, {72, 64}} {
			for _, m := range []int{130, 41} {
				w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]+sh[1]+m))
				p := newFwdPack(xs, sh[1], false)
				for _, mm := range []mat{w, wb} {
					for _, acc := range []bool{false, true} {
						want := startRows(m, sh[0])
						fwdLanes = false
						fwd2Rows(mm, p.xp, want, 0, sh[0], acc)
						for _, pg := range []int{0, 3} {
							for _, pf := range []bool{false, true} {
								fwdLanesPlaneGroups, fwdLanesOutPrefetch = pg, pf
								got := startRows(m, sh[0])
								fwdLanesPlaneRows(mm, p.xp, got, 0, sh[0], acc)
								for i := range got {
									if !sameBits(got[i], want[i]) {
										t.Fatalf("%dx%d M=%d bf16=%v acc=%v groups=%d prefetch=%v: vector %d differs from the dot-form tiles", sh[0], sh[1], m, mm.bf != nil, acc, pg, pf, i)
									}
								}
							}
						}
					}
				}
				p.release()
			}
		}
	})
}
