package engine

import (
	"fmt"
	"math"
	"testing"

	"golang.org/x/sys/cpu"
)

// withAVX2 runs fn with the AVX2 forward kernels selected, as on a CPU
// without AVX-512 (the AVX-512 ones are bypassed while fwdAVX2 is set).
func withAVX2(t *testing.T, fn func()) {
	t.Helper()
	if !cpu.X86.HasAVX2 {
		t.Skip("the CPU has no AVX2")
	}
	defer func(a, s bool) { fwdAVX2, useSIMD = a, s }(fwdAVX2, useSIMD)
	fwdAVX2, useSIMD = true, true
	fn()
}

// TestForwardAVX2MatchesScalar runs the AVX2 forward kernels and the
// scalar reference dotLanes on the same inputs and requires identical
// bits: column counts with and without a tail (K = 1…1040), row counts
// that leave one or two rows over from the 3-row tiles and the 8-row
// decoding kernel, M = 1…128 (odd M leaves a tile's second vector as
// padding), float32 and bfloat16 weights, accumulating or not, under
// GOMAXPROCS 1 and 3 (checkForward); each vector also gets the bits it
// gets alone.
func TestForwardAVX2MatchesScalar(t *testing.T) {
	withAVX2(t, func() {
		shapes := [][2]int{{1, 1}, {2, 5}, {3, 16}, {4, 17}, {5, 33}, {7, 8}, {8, 15}, {9, 1}, {16, 31},
			{17, 100}, {33, 15}, {40, 256}, {20, 600}, {49, 1024}, {64, 1040}, {301, 1040}}
		for _, sh := range shapes {
			for _, m := range []int{1, 2, 3, 4, 5, 6, 7, 8, 17, 128} {
				if !avx2CaseRuns(sh[0]*sh[1], m) {
					continue
				}
				w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*1000+sh[1]))
				for _, mm := range []mat{w, wb} {
					requireAVX2Ran(t, mm, xs)
					for _, acc := range []bool{false, true} {
						name := fmt.Sprintf("AVX2 %dx%d M=%d bf16=%v acc=%v", sh[0], sh[1], m, mm.bf != nil, acc)
						checkForward(t, name, mm, xs, acc)
					}
				}
			}
		}
	})
}

// avx2CaseRuns says whether TestForwardAVX2MatchesScalar runs M vectors
// through a weight of size elements. Natively every M runs up to 2^17
// elements and M = 128 beyond. Under qemu, where this test is most of the
// emulated run's time, the larger weights take the M that reach each kind
// of tile (one vector on the decoding kernel, an even and an odd count,
// 17 for several groups); M = 128 stays on the weights up to 2^14.
func avx2CaseRuns(size, m int) bool {
	if !emulated() {
		return size <= 1<<17 || m <= 8 || m == 128
	}
	switch {
	case size <= 1<<14:
		return true
	case size <= 1<<17:
		return m == 1 || m == 2 || m == 7 || m == 17
	}
	return m == 1 || m == 2 || m == 7
}

// TestForwardAVX2BlocksMatchScalar shrinks the row and vector blocks so
// small shapes cross several of each, with the AVX2 kernels.
func TestForwardAVX2BlocksMatchScalar(t *testing.T) {
	defer func(rows, toks int) { fwdBlockBytes, fwdTokBytes = rows, toks }(fwdBlockBytes, fwdTokBytes)
	fwdBlockBytes, fwdTokBytes = 4<<10, 8<<10
	withAVX2(t, func() {
		for _, sh := range [][2]int{{40, 100}, {301, 72}, {64, 1024}} {
			for _, m := range []int{4, 13, 37} {
				w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*1000+sh[1]))
				for _, mm := range []mat{w, wb} {
					checkForward(t, fmt.Sprintf("AVX2 %dx%d M=%d bf16=%v blocks", sh[0], sh[1], m, mm.bf != nil), mm, xs, true)
				}
			}
		}
	})
}

// requireAVX2Ran fails unless the product took the vector dispatch, so
// the comparison is not the scalar reference against itself.
func requireAVX2Ran(t *testing.T, w mat, xs [][]float32) {
	t.Helper()
	ys := rowsOf(make([]float32, len(xs)*w.rows), len(xs), w.rows)
	if !matRowsAsm(w, xs, ys, 0, w.rows, false) {
		t.Fatalf("%dx%d M=%d: the AVX2 kernels did not run", w.rows, w.cols, len(xs))
	}
}

// TestForwardAVX2TileCtlRegSameBits requires the bfloat16 tile with its
// widening control in a register (fwd2TileCtlReg) to give the bits of the
// one that reads it from memory, and the scalar reference's: shapes with
// and without a column tail, leftover rows, odd and even M.
func TestForwardAVX2TileCtlRegSameBits(t *testing.T) {
	defer func(r bool) { fwd2TileCtlReg = r }(fwd2TileCtlReg)
	withAVX2(t, func() {
		for _, sh := range [][2]int{{3, 16}, {5, 33}, {40, 256}, {49, 1024}, {64, 1040}, {301, 72}} {
			for _, m := range []int{4, 7, 37, 128} {
				_, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*7000+sh[1]))
				var got [2][]float32
				for i, reg := range []bool{false, true} {
					fwd2TileCtlReg = reg
					got[i] = make([]float32, m*sh[0])
					matMul(wb, xs, rowsOf(got[i], m, sh[0]), false)
					checkForward(t, fmt.Sprintf("AVX2 %dx%d M=%d bf16 ctlReg=%v", sh[0], sh[1], m, reg), wb, xs, true)
				}
				for i := range got[0] {
					if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
						t.Fatalf("%dx%d M=%d: output %d is %x with the control in a register, %x from memory",
							sh[0], sh[1], m, i, math.Float32bits(got[1][i]), math.Float32bits(got[0][i]))
					}
				}
			}
		}
	})
}

// TestForwardAVX2Tile4SameBits requires the 4-token tiles (fwd2Tile4) to
// give the bits of the 2-token ones and the scalar reference's: float32
// and bfloat16 weights, column counts with and without a tail, leftover
// rows, M that leaves padding in the last group, and column pieces and
// blocks small enough that a tile's sums cross several of each (with the
// tail in the last piece). The test forces the 4-token tiles at every
// column count (fwd2Tile4Cols 0).
func TestForwardAVX2Tile4SameBits(t *testing.T) {
	defer func(on bool, piece, block, cols int) {
		fwd2Tile4, fwd2PieceCols, fwd2TileBlock, fwd2Tile4Cols = on, piece, block, cols
	}(fwd2Tile4, fwd2PieceCols, fwd2TileBlock, fwd2Tile4Cols)
	fwd2Tile4Cols = 0
	withAVX2(t, func() {
		for _, sh := range [][2]int{{3, 16}, {5, 33}, {40, 256}, {49, 1024}, {64, 1040}, {301, 72}, {7, 2050}} {
			for _, pb := range [][2]int{{1024, 64}, {32, 1}, {48, 2}, {1024, 3}} {
				for _, m := range []int{4, 7, 37} {
					if emulated() && (m == 37 || pb[1] == 2) {
						continue // under qemu: every kind of piece and block, fewer vectors
					}
					w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*9000+sh[1]))
					for _, mm := range []mat{w, wb} {
						var got [2][]float32
						for i, on := range []bool{false, true} {
							fwd2Tile4, fwd2PieceCols, fwd2TileBlock = on, pb[0], pb[1]
							got[i] = make([]float32, m*sh[0])
							matMul(mm, xs, rowsOf(got[i], m, sh[0]), false)
						}
						name := fmt.Sprintf("AVX2 %dx%d M=%d bf16=%v piece %d block %d", sh[0], sh[1], m, mm.bf != nil, pb[0], pb[1])
						for i := range got[0] {
							if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
								t.Fatalf("%s: output %d is %x with the 4-token tiles, %x with the 2-token ones",
									name, i, math.Float32bits(got[1][i]), math.Float32bits(got[0][i]))
							}
						}
						checkForward(t, name, mm, xs, true)
					}
				}
			}
		}
	})
}

// TestForwardAVX2Put3SameBits requires the tiles' three-value stores and
// adds (fwd2Put3) to leave the bits putRow leaves, storing and
// accumulating, with the 2- and the 4-token tiles.
func TestForwardAVX2Put3SameBits(t *testing.T) {
	defer func(p bool, cols int) { fwd2Put3, fwd2Tile4Cols = p, cols }(fwd2Put3, fwd2Tile4Cols)
	withAVX2(t, func() {
		for _, cols := range []int{0, 1 << 30} {
			fwd2Tile4Cols = cols
			for _, sh := range [][2]int{{3, 16}, {40, 256}, {301, 72}} {
				for _, m := range []int{5, 37} {
					w, _, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*5000+sh[1]))
					var got [2][]float32
					for i, p := range []bool{false, true} {
						fwd2Put3 = p
						got[i] = make([]float32, m*sh[0])
						ys := rowsOf(got[i], m, sh[0])
						matMul(w, xs, ys, false)
						matMul(w, xs[:m-1], ys[1:], true)
					}
					for i := range got[0] {
						if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
							t.Fatalf("%dx%d M=%d tile4 cols %d: output %d is %x with put3, %x with putRow",
								sh[0], sh[1], m, cols, i, math.Float32bits(got[1][i]), math.Float32bits(got[0][i]))
						}
					}
				}
			}
		}
	})
}
