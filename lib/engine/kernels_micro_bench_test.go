//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
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
func pairedRatio(rounds int, a, b func()) float64 { return pairedRatioBy(threadCPU, rounds, a, b) }

// BenchmarkForwardBlockAB compares fwdTilesL1's block of groups
// (fwdL1TokBytes) at 256 and 512 KiB with the default 768 KiB on one
// thread, on the Qwen3-0.6B layer shapes, a slice of its lm_head and a
// LoRA A: the median of paired time ratios (below 1: faster than the
// default). Run with -cpu 1 -benchtime 1x.
func BenchmarkForwardBlockAB(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	def := fwdL1TokBytes
	defer func() { fwdL1TokBytes = def }()
	for _, sh := range [][3]int{{1024, 3072, 512}, {1024, 2048, 512}, {3072, 1024, 512}, {1024, 1024, 512}, {3072, 1024, 128}, {15360, 1024, 64}, {32, 1024, 512}} {
		rows, cols, m := sh[0], sh[1], sh[2]
		w, _ := randMats(rows, cols, 1)
		xs, ys := tileRows(m, cols, 2), tileRows(m, rows, 3)
		p := newFwdPack(xs, cols, false)
		hi := rows
		run := func(tb int) func() {
			return func() { fwdL1TokBytes = tb; fwdTilesL1(w, p.xp, ys, 0, hi, false) }
		}
		b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
			for b.Loop() {
				for _, tb := range []int{256 << 10, 512 << 10} {
					b.ReportMetric(pairedRatio(11, run(def), run(tb)), fmt.Sprintf("%dk/%dk", tb>>10, def>>10))
				}
			}
		})
		p.release()
	}
}

// pairedRatioBy is pairedRatio on the given clock (processCPU for a
// product on every worker, a wall clock for its elapsed time).
func pairedRatioBy(clock func() float64, rounds int, a, b func()) float64 {
	rs := make([]float64, rounds)
	for i := range rs {
		c0 := clock()
		a()
		c1 := clock()
		b()
		c2 := clock()
		rs[i] = (c2 - c1) / (c1 - c0)
	}
	slices.Sort(rs)
	return rs[rounds/2]
}

func wallClock() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// BenchmarkForwardSliceAB compares matMul on every worker with the batch
// taken in slices of other sizes (none, 512 KiB and 1 MiB of packed
// vectors) against the default fwdSliceBytes, on the Qwen3-0.6B layer
// shapes and a LoRA pair of rank 32 at M = 512 and 1024: medians of paired ratios of process CPU
// time (cpu) and of wall time (wall); below 1, the other size is faster.
func BenchmarkForwardSliceAB(b *testing.B) {
	def := fwdSliceBytes
	defer func() { fwdSliceBytes = def }()
	for _, sh := range [][2]int{{1024, 2048}, {2048, 1024}, {1024, 1024}, {3072, 1024}, {1024, 3072}, {32, 1024}, {1024, 32}} {
		rows, cols := sh[0], sh[1]
		w, _ := randMats(rows, cols, 1)
		for _, m := range []int{128, 512, 1024} {
			xs, ys := tileRows(m, cols, 2), tileRows(m, rows, 3)
			run := func(sb int) func() {
				return func() { fwdSliceBytes = sb; matMul(w, xs, ys, false) }
			}
			b.Run(fmt.Sprintf("%dx%d/M=%d", rows, cols, m), func(b *testing.B) {
				for b.Loop() {
					for _, sb := range []int{0, 512 << 10, 1 << 20} {
						name := fmt.Sprintf("%dk/%dk", sb>>10, def>>10)
						b.ReportMetric(pairedRatioBy(processCPU, 9, run(def), run(sb)), "cpu-"+name)
						b.ReportMetric(pairedRatioBy(wallClock, 9, run(def), run(sb)), "wall-"+name)
					}
				}
			})
		}
	}
}
