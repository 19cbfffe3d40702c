package export

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDeltaRow checks a row of B'·A against a float64 sum for shapes that
// use the vector kernel, its tail, both and neither.
func TestDeltaRow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct{ rank, in int }{{1, 32}, {5, 100}, {32, 64}, {3, 7}, {8, 31}, {33, 160}} {
		u := &update{r: sh.rank, in: sh.in, out: 3, a: make([]float32, sh.rank*sh.in), b: make([]float32, 3*sh.rank)}
		for i := range u.a {
			u.a[i] = float32(r.NormFloat64())
		}
		for i := range u.b {
			u.b[i] = float32(r.NormFloat64())
		}
		d := make([]float32, sh.in)
		for o := range 3 {
			for i := range d {
				d[i] = 99 // stale values must not leak into the sum
			}
			u.deltaRow(o, d)
			for j := range d {
				want, mag := 0.0, 0.0
				for k := range sh.rank {
					p := float64(u.b[o*sh.rank+k]) * float64(u.a[k*sh.in+j])
					want, mag = want+p, mag+math.Abs(p)
				}
				if math.Abs(float64(d[j])-want) > 1e-6*mag+1e-7 {
					t.Fatalf("rank %d in %d: d[%d][%d] = %g, want %g", sh.rank, sh.in, o, j, d[j], want)
				}
			}
		}
	}
}
