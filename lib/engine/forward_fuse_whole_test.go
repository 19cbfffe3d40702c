package engine

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestWholeRowsSplitCovers checks attnWholeRows' units (wholeRowsSplit)
// over 1-17 rows, 1-4 cores and 1-8 KV heads: every row's every KV head
// is in exactly one unit, whole rows come first and are whole, and the
// units are a multiple of the cores whenever it reports a split.
func TestWholeRowsSplitCovers(t *testing.T) {
	for _, kvh := range []int{1, 2, 4, 8} {
		for procs := 1; procs <= 4; procs++ {
			for rows := 1; rows <= 17; rows++ {
				b, ok := wholeRowsSplit(kvh, rows, procs)
				name := fmt.Sprintf("kv=%d procs=%d rows=%d", kvh, procs, rows)
				if !ok {
					if procs == 1 || kvh%procs == 0 {
						t.Fatalf("%s: no split, though cutting each row left over by the cores would do", name)
					}
					continue
				}
				if b.units()%procs != 0 {
					t.Fatalf("%s: %d units, not a multiple of the cores", name, b.units())
				}
				if b.whole != rows-rows%procs {
					t.Fatalf("%s: %d whole rows", name, b.whole)
				}
				seen := make([]int, rows*kvh)
				for u := range b.units() {
					i, kv0, kv1 := b.unit(u)
					if u < b.whole && (i != u || kv0 != 0 || kv1 != kvh) {
						t.Fatalf("%s: unit %d is row %d heads %d-%d, not a whole row", name, u, i, kv0, kv1)
					}
					if i < 0 || i >= rows || kv0 < 0 || kv1 > kvh || kv0 >= kv1 {
						t.Fatalf("%s: unit %d is row %d heads %d-%d", name, u, i, kv0, kv1)
					}
					for k := kv0; k < kv1; k++ {
						seen[i*kvh+k]++
					}
				}
				for j, n := range seen {
					if n != 1 {
						t.Fatalf("%s: row %d KV head %d in %d units", name, j/kvh, j%kvh, n)
					}
				}
			}
		}
	}
}

// TestDecodeFuseWholeRowsSameBits decodes steps of 1, 2, 3, 5 and 16
// rows fused with blocked units (the position floor lowered to reach
// them) cut into whole rows (attnWholeRows) and alike (blockedChunks),
// on heads of 128 with 2, 4 and 8 KV heads, GPT-OSS's sinks and window
// among them, on two cores: every logit and cached value must have the
// same bits, and the same as unfused.
func TestDecodeFuseWholeRowsSameBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	defer func(v, l, k, h, s, b, w bool, n, p int) {
		decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare, fuseAttnBlocked, attnWholeRows, fuseMaxRows, attnBlockedMinPos = v, l, k, h, s, b, w, n, p
	}(decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare, fuseAttnBlocked, attnWholeRows, fuseMaxRows, attnBlockedMinPos)
	fuseMaxRows, attnBlockedMinPos = 16, 40
	for _, arch := range []models.Family{models.Qwen3, models.GptOss} {
		for _, sh := range [][2]int{{4, 2}, {8, 4}, {16, 8}} {
			m := blockedAttnModel(t, arch, sh, "fuse-whole", 23)
			run := func(fused, whole bool) (logits, caches []float32) {
				decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare, fuseAttnBlocked, attnWholeRows = fused, fused, fused, fused, true, true, whole
				return blockedAttnDecode(m, 5, 11)
			}
			wantL, wantC := run(false, false)
			name := fmt.Sprintf("%s %v", arch, sh)
			for _, whole := range []bool{false, true} {
				l, cs := run(true, whole)
				fuseSameBits(t, fmt.Sprintf("%s whole=%v logits", name, whole), wantL, l)
				fuseSameBits(t, fmt.Sprintf("%s whole=%v caches", name, whole), wantC, cs)
			}
		}
	}
}
