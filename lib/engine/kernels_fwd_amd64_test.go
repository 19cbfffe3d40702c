package engine

import (
	"fmt"
	"math"
	"testing"
)

// TestForwardBlocksMatchScalar shrinks the row and vector blocks of the
// 4×6 tiles, and the column pieces of long rows, so small shapes cross
// several of each (a batch of 512 vectors of 3072 columns does at the
// default sizes), and requires the scalar reference's bits.
//
// With fwdKC = 64 the rows longer than it go in pieces (fwdTile4x6KG);
// with fwdKC = 4096 every shape is whole (fwdTile4x6G); the blocks of
// groups are made small enough (fwdL1TokBytes) that a batch crosses
// several. matMul takes the batch in slices (fwdSliceBytes) of one group
// at 1024 columns and 13 at 100 (the vectors past the last group of four
// in the last slice), or whole. Rows past the last whole tile are taken
// by a last tile that overlaps the one before (40 = 6·6 + 4 rows), in the
// last block of tiles (53 = 48 + 5) or a block of their own (301).
func TestForwardBlocksMatchScalar(t *testing.T) {
	if !fwdAsm {
		t.Skip("fwdKC and fwdL1TokBytes shape the AVX-512 kernels, which this CPU lacks (TestForwardAVX2BlocksMatchScalar shrinks the AVX2 ones)")
	}
	defer func(kc, l1, sb int) { fwdKC, fwdL1TokBytes, fwdSliceBytes = kc, l1, sb }(fwdKC, fwdL1TokBytes, fwdSliceBytes)
	fwdL1TokBytes = 8 << 10
	for _, kc := range []int{64, 4096} {
		fwdKC = kc
		fwdSliceBytes = map[int]int{64: 24 << 10, 4096: 0}[kc]
		for _, sh := range [][2]int{{40, 100}, {301, 72}, {64, 1024}, {30, 64}, {13, 65}, {24, 2085}, {53, 40}} {
			for _, m := range []int{4, 13, 37, 101} {
				w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*1000+sh[1]))
				for _, mm := range []mat{w, wb} {
					checkForward(t, fmt.Sprintf("%dx%d M=%d bf16=%v kc=%d blocks", sh[0], sh[1], m, mm.bf != nil, kc), mm, xs, true)
				}
			}
		}
	}
}

// TestPackTokens checks the packed layout, both from fwdPackGroup and
// from the copy loop, against its definition: xp[g·packedLen + 64c +
// 16t + l] = xs[4g+t][16c+l], zero past n, the last group padded with
// its last vector.
func TestPackTokens(t *testing.T) {
	defer func(a bool) { fwdPackAsm = a }(fwdPackAsm)
	for _, n := range []int{1, 15, 16, 17, 100, 1024} {
		for _, m := range []int{1, 3, 4, 5, 13, 101} { // 101: 26 groups, packed by all workers
			_, _, xs := fwdCase(1, n+3, m, uint64(100*n+m)) // longer rows: only n columns are packed
			for _, how := range []struct{ asm, parallel bool }{{false, false}, {false, true}, {fwdAsm, false}, {fwdAsm, true}} {
				fwdPackAsm = how.asm
				pp := new([]float32)
				*pp = make([]float32, 4*packedLen(n)*((m+3)/4)+5)
				for i := range *pp {
					(*pp)[i] = float32(i) // stale contents must not survive
				}
				xp := packTokens(xs, n, pp, how.parallel)
				if len(xp) != packedLen(n)*((m+3)/4) {
					t.Fatalf("n=%d m=%d: packed length %d", n, m, len(xp))
				}
				for g := range (m + 3) / 4 {
					for c := range (n + 15) / 16 {
						for tok := range 4 {
							for l := range 16 {
								want := float32(0)
								if 16*c+l < n {
									want = xs[min(4*g+tok, m-1)][16*c+l]
								}
								if got := xp[g*packedLen(n)+64*c+16*tok+l]; got != want {
									t.Fatalf("n=%d m=%d %+v: group %d chunk %d token %d lane %d = %v, want %v", n, m, how, g, c, tok, l, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestForwardTilesWriteRows checks the 4×6 tiles' direct writes
// (fwdTilesL1): each vector's sums go into its own row wherever it is
// (rows allocated apart, of several lengths, not in address order), into
// columns [lo, hi) only, set or added to what is there with the scalar
// reference's bits, and a last tile overlapping the one before (26 rows
// = 4·6 + 2) adds nothing twice; whole rows and rows in pieces
// (fwdTile4x6KG with fwdKC = 64).
func TestForwardTilesWriteRows(t *testing.T) {
	if !fwdAsm {
		t.Skip("the 4×6 tiles are AVX-512 kernels, which this CPU lacks")
	}
	defer func(kc int) { fwdKC = kc }(fwdKC)
	const lo, hi, m = 7, 33, 12
	for _, kc := range []int{64, 4096} {
		fwdKC = kc
		for _, cols := range []int{100, 130} {
			w, wb, xs := fwdCase(40, cols, m, uint64(cols+kc))
			for _, mm := range []mat{w, wb} {
				for _, acc := range []bool{false, true} {
					rows := func() [][]float32 {
						ys := make([][]float32, m)
						for i := range ys {
							b := (5 * i) % m // allocated out of order
							ys[b] = make([]float32, 40+3*(b%3))
							for j := range ys[b] {
								ys[b][j] = float32(1000*b+j) / 64
							}
						}
						return ys
					}
					want, got := rows(), rows()
					matRowsScalar(mm, xs, want, lo, hi, acc)
					p := newFwdPack(xs, cols, false)
					fwdTilesL1(mm, p.xp, got, lo, hi, acc)
					p.release()
					for b := range got {
						if !sameBits(got[b], want[b]) {
							t.Fatalf("kc=%d cols=%d bf16=%v acc=%v: vector %d's row differs from the scalar reference", kc, cols, mm.bf != nil, acc, b)
						}
					}
				}
			}
		}
	}
}

// TestForwardColsMatchScalar checks the kernels for rows of 16-64 columns
// (fwdCols, a LoRA B's product) against the scalar reference's bits:
// row counts around the 16-row blocks, odd and even batches (tokens go in
// pairs), accumulating or not, through matMul (with fwdColsMinTokens 1,
// then at its default); and that they take those products (fwdColsRows)
// and only those.
func TestForwardColsMatchScalar(t *testing.T) {
	if !fwdAsm {
		t.Skip("the fwdCols kernels are AVX-512, which this CPU lacks")
	}
	defer func(n int) { fwdColsMinTokens = n }(fwdColsMinTokens)
	fwdColsMinTokens = 1
	for _, k := range []int{16, 32, 48, 64} {
		for _, rows := range []int{1, 15, 16, 17, 40, 1024} {
			for _, m := range []int{1, 2, 3, 5, 8, 17} {
				w, _, xs := fwdCase(rows, k, m, uint64(100*k+rows+m))
				for _, acc := range []bool{false, true} {
					checkForward(t, fmt.Sprintf("%dx%d M=%d acc=%v cols", rows, k, m, acc), w, xs, acc)
				}
			}
		}
	}
	for _, k := range []int{8, 24, 80, 1024} {
		w, wb, xs := fwdCase(20, k, 4, 1)
		for _, mm := range []mat{w, wb} {
			if fwdColsRows(mm, xs, rowsOf(make([]float32, 4*20), 4, 20), 0, 20, false) {
				t.Errorf("fwdCols took %d columns (bf16=%v)", k, mm.bf != nil)
			}
		}
	}
	w, _, xs := fwdCase(20, 32, 4, 1)
	if !fwdColsRows(w, xs, rowsOf(make([]float32, 4*20), 4, 20), 0, 20, false) {
		t.Error("fwdCols did not take 32 columns")
	}
	fwdColsMinTokens = 5
	if fwdColsRows(w, xs, rowsOf(make([]float32, 4*20), 4, 20), 0, 20, false) {
		t.Error("fwdCols took a batch under fwdColsMinTokens")
	}
	// Long rows of outputs and a batch past the kernel's prefetch of the
	// output lines two pairs on, by default (fwdColsMinTokens).
	fwdColsMinTokens = 128
	w, _, xs = fwdCase(3000, 32, 131, 2)
	checkForward(t, "3000x32 M=131 cols", w, xs, true)
}

// TestFwdPrefetchStepCoversTile walks a tile kernel's prefetch pointer as
// the kernel does (while pf < end, a line at pf and, for a step over 64
// bytes, the lines after it up to the step, then pf += step) and requires
// every line of the next tile's weights to be asked for, within
// fwdPrefetchSpread of the call's steps when fwdPrefetchLines lines a
// step would have been done by then (one line a step without
// fwdPrefetchWide), and no faster than one line a step where that would
// do; with fwdPrefetchEven the wide steps over all of the call's steps
// instead, no faster than that needs. A decoding step's one group (64
// steps of 1024 columns) must cover a whole tile of bfloat16 and of
// float32 weights.
func TestFwdPrefetchStepCoversTile(t *testing.T) {
	defer func(w, e bool) { fwdPrefetchWide, fwdPrefetchEven = w, e }(fwdPrefetchWide, fwdPrefetchEven)
	for _, even := range []bool{false, true} {
		fwdPrefetchEven = even
		for _, wide := range []bool{false, true} {
			fwdPrefetchWide = wide
			most := 1
			if wide && even {
				most = fwdPrefetchEvenLines
			} else if wide {
				most = fwdPrefetchFrontLines
			}
			for _, bytes := range []int{6 * 1024 * 4, 6 * 3072 * 4 / 3, 6 * 2048 * 2, 6 * 1024 * 2, 6 * 16 * 4, 64, 100} {
				for _, steps := range []int{1, 7, 64, 128, 192, 256, 16 * 64, 48 * 64, 16 * 192} {
					fwdPrefetchCovers(t, bytes, steps, most)
				}
			}
		}
	}
}

// fwdPrefetchCovers is TestFwdPrefetchStepCoversTile for one tile of
// bytes, steps steps and at most most lines a step.
func fwdPrefetchCovers(t *testing.T, bytes, steps, most int) {
	t.Helper()
	ps := fwdPrefetchStep(bytes, steps)
	// even: the wide steps spread over every step, at any stride
	even := fwdPrefetchEven && most > 1 && int(float64(bytes)/(fwdPrefetchSpread*float64(steps)))+1 > 64
	if ps < 1 || ps > 64*most || ps > 64 && ps%64 != 0 && !even {
		t.Fatalf("fwdPrefetchStep(%d, %d) = %d, want 1..64 or a multiple of 64 up to %d", bytes, steps, ps, 64*most)
	}
	if even && ps < 64*most && ps*steps > bytes+steps {
		t.Errorf("bytes %d steps %d: step %d, want the tile over all steps (%d)", bytes, steps, ps, bytes/steps+1)
	}
	lines, last := map[int]bool{}, 0
	for s, pf := 0, 0; s < steps && pf < bytes; s, pf = s+1, pf+ps {
		for l := 0; l == 0 || 64*l < ps; l++ {
			lines[pf/64+l] = true
		}
		last = s
	}
	want := (bytes + 63) / 64
	if want > most*steps {
		return // more lines than steps: the kernel asks for its most a step
	}
	if got := len(lines); got < want || got > want+most-1 {
		t.Errorf("bytes %d steps %d: %d lines prefetched, want %d", bytes, steps, got, want)
	}
	if limit := int(fwdPrefetchSpread*float64(steps)) + 1; ps != 64 && last > limit && !even {
		t.Errorf("bytes %d steps %d: the last line at step %d, after %d", bytes, steps, last, limit)
	}
}

// TestSliceOfSpreadsGroups checks matMul's slices of a batch: whole
// groups of four from a multiple of four, together every vector once, and
// no two differing by more than a group (a fixed step left 64 of 1024).
func TestSliceOfSpreadsGroups(t *testing.T) {
	for _, m := range []int{1, 4, 5, 127, 512, 1023, 1024, 4099} {
		for s := 1; s <= min(m, 11); s++ {
			next, lo, hi := 0, m, 0
			for i := range s {
				t0, t1 := sliceOf(m, s, i)
				if t0 != next || t0%4 != 0 {
					t.Fatalf("m=%d s=%d: slice %d starts at %d, want %d (a multiple of 4)", m, s, i, t0, next)
				}
				next, lo, hi = t1, min(lo, t1-t0), max(hi, t1-t0)
			}
			if next != m || hi-lo > 4 {
				t.Fatalf("m=%d s=%d: slices end at %d, sizes %d to %d", m, s, next, lo, hi)
			}
		}
	}
}

// TestForwardRow16MatchesDotLanes requires the decoding kernels
// (fwdRow16BF16, fwdRow16F32, and fwdRow16BF16Unpaced, the benchmarks'
// bfloat16 kernel without its pacing) to give dotLanes' bits for every row, on
// lengths with and without a masked tail and with an odd count of whole
// chunks (the bfloat16 kernel widens a lone chunk and the tail its own
// ways), rows not 64-byte aligned (stride n+3), and an out buffer that
// held other values.
func TestForwardRow16MatchesDotLanes(t *testing.T) {
	if !fwdAsm {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	r := newRNG(7)
	for _, n := range []int{1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 1024, 1040, 1055} {
		stride := n + 3
		x := make([]float32, n)
		fill(x, r, 1)
		w := make([]float32, 16*stride)
		fill(w, r, 1)
		for i := range w {
			w[i] = bf16(uint16(math.Float32bits(w[i]) >> 16)) // exact in bfloat16
		}
		wb := make([]uint16, len(w))
		for i, v := range w {
			wb[i] = uint16(math.Float32bits(v) >> 16)
		}
		var got, gotB, gotU [16]float32
		for i := range got {
			got[i], gotB[i], gotU[i] = float32(i), float32(-i), float32(2*i)
		}
		fwdRow16F32(&x[0], &w[0], stride, n, &got)
		fwdRow16BF16(&x[0], &wb[0], stride, n, &gotB)
		fwdRow16BF16Unpaced(&x[0], &wb[0], stride, n, &gotU)
		for row := range 16 {
			want := dotLanes(w[row*stride:], x)
			if wantB := dotLanesBF(wb[row*stride:], x); math.Float32bits(wantB) != math.Float32bits(want) {
				t.Fatalf("n=%d row %d: dotLanesBF %v, dotLanes %v", n, row, wantB, want)
			}
			if math.Float32bits(got[row]) != math.Float32bits(want) || math.Float32bits(gotB[row]) != math.Float32bits(want) || math.Float32bits(gotU[row]) != math.Float32bits(want) {
				t.Errorf("n=%d row %d: fwdRow16F32 %v, fwdRow16BF16 %v, fwdRow16BF16Unpaced %v, dotLanes %v", n, row, got[row], gotB[row], gotU[row], want)
			}
		}
	}
}
