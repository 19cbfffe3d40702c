package engine

import "testing"

// TestFwdPrefetchOneGroupCoversTile pins fwdPrefetchEvenLines: a tile
// kernel's call over one group (a decoding step of four or five rows)
// must ask for every line of the next tile, float32 and bfloat16, whole
// rows of 1024 columns and a third of 3072 (fwdTile4x6KG's pieces), at
// no more lines a step than the kernel prefetches (fwdPrefetchLines);
// and bfloat16 steps and float32 steps of two groups or more must never
// ask for more than four lines, the most before six, so that raising it
// changed nothing but float32's one group.
func TestFwdPrefetchOneGroupCoversTile(t *testing.T) {
	defer func(w, e bool) { fwdPrefetchWide, fwdPrefetchEven = w, e }(fwdPrefetchWide, fwdPrefetchEven)
	fwdPrefetchWide, fwdPrefetchEven = true, true
	for _, es := range []int{2, 4} {
		for _, cols := range []int{1024, 3072 / 3} {
			for groups := 1; groups <= 4; groups++ {
				bytes, steps := 6*cols*es, groups*cols/16
				ps := fwdPrefetchStep(bytes, steps)
				if ps > 64*fwdPrefetchLines {
					t.Fatalf("%d-byte weights, %d groups: step %d bytes, past the kernel's %d lines", es, groups, ps, fwdPrefetchLines)
				}
				if (es == 2 || groups > 1) && ps > 4*64+1 {
					t.Errorf("%d-byte weights, %d groups: step %d bytes, over four lines", es, groups, ps)
				}
				lines := map[int]bool{}
				for s, pf := 0, 0; s < steps && pf < bytes; s, pf = s+1, pf+ps {
					for l := 0; l == 0 || 64*l < ps; l++ {
						lines[pf/64+l] = true
					}
				}
				for l := range bytes / 64 {
					if !lines[l] {
						t.Fatalf("%d-byte weights, %d groups (step %d bytes): line %d of the next tile's %d never prefetched", es, groups, ps, l, bytes/64)
					}
				}
			}
		}
	}
}
