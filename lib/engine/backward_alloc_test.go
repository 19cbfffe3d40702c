package engine

import (
	"runtime"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestAttentionBackwardReusesScratch holds attentionBackward's garbage
// below one KV head's keys per call once its scratch exists (a tiny-llama
// layer at 128 positions, on one core and on two): the packed heads,
// scores and gradients come back from attnBackScratches instead of being
// allocated, cleared and collected every call (they were about 80 KB per
// call here).
func TestAttentionBackwardReusesScratch(t *testing.T) {
	c := mustLoad(t, models.TinyLlama).cfg
	const n = 128
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	r := newRNG(1)
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
	run := func() { attentionBackward(c, 0, nil, q, k, v, datt, dq, dk, dv) }
	for _, procs := range []int{1, 2} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			run()
			var before, after runtime.MemStats
			const calls = 20
			runtime.ReadMemStats(&before)
			for range calls {
				run()
			}
			runtime.ReadMemStats(&after)
			perCall := (after.TotalAlloc - before.TotalAlloc) / calls
			if limit := uint64(4 * n * c.HeadDim); perCall >= limit {
				t.Errorf("GOMAXPROCS=%d: attentionBackward allocates %d bytes per call, want under %d", procs, perCall, limit)
			}
		}()
	}
}
