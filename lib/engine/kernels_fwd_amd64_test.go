package engine

import (
	"fmt"
	"testing"
)

// TestForwardBlocksMatchScalar shrinks the row and vector blocks of the
// 4×6 tiles so small shapes cross several of each (a batch of 512 vectors
// of 3072 columns does at the default sizes), and requires the scalar
// reference's bits.
func TestForwardBlocksMatchScalar(t *testing.T) {
	defer func(rows, toks int) { fwdBlockBytes, fwdTokBytes = rows, toks }(fwdBlockBytes, fwdTokBytes)
	fwdBlockBytes, fwdTokBytes = 4<<10, 8<<10
	for _, sh := range [][2]int{{40, 100}, {301, 72}, {64, 1024}} {
		for _, m := range []int{4, 13, 37} {
			w, wb, xs := fwdCase(sh[0], sh[1], m, uint64(sh[0]*1000+sh[1]))
			for _, mm := range []mat{w, wb} {
				checkForward(t, fmt.Sprintf("%dx%d M=%d bf16=%v blocks", sh[0], sh[1], m, mm.bf != nil), mm, xs, true)
			}
		}
	}
}
