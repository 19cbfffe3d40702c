package engine

import (
	"math"
	"runtime"
	"testing"
)

// TestMatMulGroupMatchesMatMul runs matMulGroup on the matrices a layer
// reads the same vectors with (rows past the last 16-row block, float32
// and bfloat16 weights, one to five vectors: decoding's one fork, and
// up to a prefill's 130: the batch packed once for every matrix, on one
// and two threads) and requires the bits of matMul on each matrix alone,
// on every row of every output.
func TestMatMulGroupMatchesMatMul(t *testing.T) {
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			checkMatMulGroup(t, []int{1, 2, 3, 4, 5, 8, 37, 130})
		}()
	}
}

func checkMatMulGroup(t *testing.T, batches []int) {
	shapes := [][2]int{{512, 256}, {256, 256}, {200, 256}, {40, 256}}
	for _, bf := range []bool{false, true} {
		var ms []mat
		for i, sh := range shapes {
			w, wb := randMats(sh[0], sh[1], uint64(i+1))
			if bf {
				w = wb
			}
			ms = append(ms, w)
		}
		for _, m := range batches {
			xs := tileRows(m, 256, uint64(10+m))
			yss, want := make([][][]float32, len(ms)), make([][][]float32, len(ms))
			for i, w := range ms {
				yss[i], want[i] = tileRows(m, w.rows, 1), tileRows(m, w.rows, 2)
				matMul(w, xs, want[i], false)
			}
			matMulGroup(ms, xs, yss)
			for i := range ms {
				for b := range xs {
					for j, v := range want[i][b] {
						if got := yss[i][b][j]; math.Float32bits(got) != math.Float32bits(v) {
							t.Fatalf("bf16 %v, %d vectors: matrix %d vector %d row %d = %g, matMul %g", bf, m, i, b, j, got, v)
						}
					}
				}
			}
		}
	}
}

// Decoding's pieces cover every row of every matrix once, in order, in
// whole 16-row blocks (a matrix's last piece takes what is left), and
// shrink towards the end: the lm_head's last piece is decodeMinPiece's
// 128 rows where equal pieces (8 a worker) made it 9,504, a millisecond
// of one core while the other waited.
func TestDecodePiecesShrinkToTheEnd(t *testing.T) {
	for _, ms := range [][]mat{
		{{rows: 2048, cols: 1024}, {rows: 1024, cols: 1024}, {rows: 1000, cols: 1024}},
		{{rows: 151936, cols: 1024}},
		{{rows: 40, cols: 256}},
		{{rows: 24, cols: 1 << 20}},
	} {
		ps := decodePieces(ms, 16, 2)
		next := [2]int{0, 0} // matrix, row
		for k, p := range ps {
			if p.w != next[0] || p.lo != next[1] || p.hi <= p.lo || p.hi > ms[p.w].rows {
				t.Fatalf("%v: piece %d is %+v, want matrix %d from row %d", ms, k, p, next[0], next[1])
			}
			if p.hi < ms[p.w].rows && (p.hi-p.lo)%16 != 0 {
				t.Fatalf("%v: piece %d %+v is not whole 16-row blocks", ms, k, p)
			}
			next = [2]int{p.w, p.hi}
			if p.hi == ms[p.w].rows {
				next = [2]int{p.w + 1, 0}
			}
		}
		if next[0] != len(ms) {
			t.Fatalf("%v: pieces end at matrix %d", ms, next[0])
		}
	}
	ps := decodePieces([]mat{{rows: 151936, cols: 1024}}, 16, 2)
	if first, last := ps[0], ps[len(ps)-1]; last.hi-last.lo > decodeMinPiece/1024 || first.hi-first.lo < 151936/16 {
		t.Fatalf("lm_head pieces: first %d rows, last %d; want >= 9496 and <= %d", first.hi-first.lo, last.hi-last.lo, decodeMinPiece/1024)
	}
	// Many cores: every core gets a piece of a small product.
	qkv := []mat{{rows: 2048, cols: 1024}, {rows: 1024, cols: 1024}, {rows: 1024, cols: 1024}}
	for _, workers := range []int{2, 16, 64} {
		if ps := decodePieces(qkv, 16, workers); len(ps) < 2*workers {
			t.Errorf("q/k/v on %d cores: %d pieces, want at least %d", workers, len(ps), 2*workers)
		}
	}
}

// A decoding product's fork (one to three vectors) gives the scalar
// reference's bits on tall matrices, rows a multiple of 16 or not.
func TestDecodeForkMatchesScalar(t *testing.T) {
	for _, rows := range []int{4096, 4000} {
		w, wb := randMats(rows, 320, uint64(rows))
		for _, m := range []mat{w, wb} {
			for n := 1; n <= 3; n++ {
				xs := tileRows(n, 320, uint64(n))
				got, want := tileRows(n, rows, 1), tileRows(n, rows, 2)
				matMul(m, xs, got, false)
				matRowsScalar(m, xs, want, 0, rows, false)
				for b := range xs {
					for j, v := range want[b] {
						if math.Float32bits(got[b][j]) != math.Float32bits(v) {
							t.Fatalf("%d rows, bf16 %v, %d vectors: row %d of vector %d = %g, scalar %g", rows, m.bf != nil, n, j, b, got[b][j], v)
						}
					}
				}
			}
		}
	}
}
