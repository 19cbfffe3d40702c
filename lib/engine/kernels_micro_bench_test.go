//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in seconds
// (CLOCK_THREAD_CPUTIME_ID: getrusage's per-thread figure is in ticks).
func threadCPU() float64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return float64(ts.Nano()) / 1e9
}

// pairedRatio runs a and b alternately rounds times on the calling thread
// and returns the median of time(b)/time(a) in thread CPU time. On a
// shared machine the speed of a core drifts by tens of percent within
// seconds (a neighbour's cache traffic, the VM's frequency), which best-of
// rates of separate runs do not cancel; the two halves of a pair run
// within milliseconds of each other.
func pairedRatio(rounds int, a, b func()) float64 {
	rs := make([]float64, rounds)
	for i := range rs {
		c0 := threadCPU()
		a()
		c1 := threadCPU()
		b()
		c2 := threadCPU()
		rs[i] = (c2 - c1) / (c1 - c0)
	}
	slices.Sort(rs)
	return rs[rounds/2]
}

// BenchmarkForwardOrderAB compares the forward product's two loop orders
// on one thread for 1024-column shapes (Qwen3-0.6B's q, k/v, gate/up and
// a slice of its lm_head; a LoRA A): fwdTiles (a block of rows in L2 met
// by every group of four vectors) and fwdTilesL1 (one 6-row tile in L1
// met by a block of groups, for fwdL1TokBytes of 256-768 KiB), as the
// median of paired time ratios (below 1: fwdTilesL1 is faster). Run with
// -cpu 1 -benchtime 1x.
func BenchmarkForwardOrderAB(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func(v int) { fwdL1TokBytes = v }(fwdL1TokBytes)
	for _, sh := range [][3]int{{1024, 3072, 512}, {1024, 2048, 512}, {1024, 3072, 128}, {3072, 1024, 512}, {2048, 1024, 512}, {1024, 1024, 512}, {3072, 1024, 128}, {15360, 1024, 64}, {32, 1024, 512}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		w, _ := randMats(rows, cols, 1)
		xs, ys := tileRows(m, cols, 2), tileRows(m, rows, 3)
		p := newFwdPack(xs, cols, false)
		hi := rows / 6 * 6
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				for _, tb := range []int{256 << 10, 512 << 10, 768 << 10} {
					fwdL1TokBytes = tb
					r := pairedRatio(11, func() { fwdTiles(w, p.xp, ys, 0, hi, false) }, func() { fwdTilesL1(w, p.xp, ys, 0, hi, false) })
					b.ReportMetric(r, fmt.Sprintf("L1-%dk/rows", tb>>10))
				}
			}
		})
		p.release()
	}
}
