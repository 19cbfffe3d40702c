package engine

import (
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// attnBackCase returns a call of attentionBackward on random inputs of
// c's attention shape at n positions, and the gradients it writes.
func attnBackCase(c Config, n int, seed uint64) (run func(), grads [][][]float32) {
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	r := newRNG(seed)
	slab := func(width int) []float32 {
		s := make([]float32, n*width)
		for i := range s {
			s[i] = r.uniform32() - 0.5
		}
		return s
	}
	rows := func(width int) [][]float32 { return rowsOf(slab(width), n, width) }
	q, k, v, datt := rows(qd), slab(kvd), slab(kvd), rows(qd)
	dq, dk, dv := rows(qd), rows(kvd), rows(kvd)
	run = func() {
		for _, g := range [][][]float32{dq, dk, dv} {
			for _, row := range g {
				clear(row)
			}
		}
		attentionBackward(c, 0, nil, q, k, v, datt, dq, dk, dv)
	}
	return run, [][][]float32{dq, dk, dv}
}

// TestAttentionBackwardReusesScratch holds attentionBackward's garbage
// per call, once its scratch exists, under an eighth of a call's with no
// scratch to reuse (two collections empty the pool), for a tiny-llama
// layer at 128 positions on one core and on two: the packed heads,
// scores and gradients come back from attnBackScratches instead of being
// allocated, cleared and collected every call. (The pool may still miss
// now and then: a goroutine on one P does not see another P's private
// item.)
func TestAttentionBackwardReusesScratch(t *testing.T) {
	skipPoolsUnderRace(t)
	run, _ := attnBackCase(mustLoad(t, models.TinyLlama).cfg, 128, 1)
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			allocs := func(calls int) uint64 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range calls {
					run()
				}
				runtime.ReadMemStats(&after)
				return (after.TotalAlloc - before.TotalAlloc) / uint64(calls)
			}
			runtime.GC()
			runtime.GC()
			fresh := allocs(1)
			allocs(10) // each P's pool holds a scratch
			if perCall := allocs(50); perCall >= fresh/8 {
				t.Errorf("GOMAXPROCS=%d: attentionBackward allocates %d bytes per call, %d with no scratch to reuse", procs, perCall, fresh)
			}
		}()
	}
}

// TestAttentionBackwardScratchAcrossShapes runs attentionBackward for
// one attention shape at 64 and at 16 positions, then for another at 16
// (tiny-llama's 16-wide heads, then tiny-qwen3's 32-wide, whose buffers
// fit in the first's), and back, on one core so the pool hands each call
// the scratch the previous one left: each gives the bits it gave on a
// fresh scratch.
func TestAttentionBackwardScratchAcrossShapes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	shapes := []Config{mustLoad(t, models.TinyLlama).cfg, mustLoad(t, models.TinyQwen3).cfg}
	type call struct{ shape, n int }
	want := map[call][][][]float32{}
	calls := []call{{0, 64}, {0, 16}, {1, 16}, {1, 64}, {0, 16}, {0, 64}, {1, 16}}
	for _, k := range calls {
		if _, ok := want[k]; !ok {
			runtime.GC()
			runtime.GC()
			run, g := attnBackCase(shapes[k.shape], k.n, 1)
			run()
			want[k] = clone3(g)
		}
	}
	runtime.GC()
	runtime.GC()
	for _, k := range calls {
		run, g := attnBackCase(shapes[k.shape], k.n, 1)
		run()
		for j := range g {
			for p := range g[j] {
				if !slices.Equal(g[j][p], want[k][j][p]) {
					t.Fatalf("shape %d at %d positions after the calls before: gradient %d differs at position %d", k.shape, k.n, j, p)
				}
			}
		}
	}
}

func clone3(g [][][]float32) [][][]float32 {
	out := make([][][]float32, len(g))
	for i, rows := range g {
		for _, r := range rows {
			out[i] = append(out[i], slices.Clone(r))
		}
	}
	return out
}
