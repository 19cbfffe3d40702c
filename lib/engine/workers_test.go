package engine

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForkJoinRunsEachIndexOnce runs jobs of many sizes from several
// goroutines at once (so offers replace each other while workers are
// inside jobs), with nested jobs, at GOMAXPROCS 1, 2 and 4, and requires
// every index to run exactly once before forkJoin returns.
func TestForkJoinRunsEachIndexOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			var wg sync.WaitGroup
			for c := range 4 {
				wg.Go(func() {
					for round := range 200 {
						n := (round*7+c)%37 + 1
						counts := make([]atomic.Int32, n)
						forkJoin(n, func(i int) {
							counts[i].Add(1)
							if i == 0 && round%10 == 0 {
								inner := make([]atomic.Int32, 5)
								forkJoin(5, func(k int) { inner[k].Add(1) })
								for k := range inner {
									if got := inner[k].Load(); got != 1 {
										t.Errorf("nested index %d ran %d times", k, got)
									}
								}
							}
						})
						for i := range counts {
							if got := counts[i].Load(); got != 1 {
								t.Errorf("GOMAXPROCS=%d n=%d: index %d ran %d times", procs, n, i, got)
							}
						}
					}
				})
			}
			wg.Wait()
		}()
	}
	if workPool.cur.Load() != nil {
		t.Error("the pool still offers a finished job (and holds its caller's data)")
	}
}

// TestForkJoinPanicWaitsForWorkers panics on the caller's goroutine while a
// worker is inside the job: the panic reaches the caller only after the
// worker has left, so nothing writes to the caller's data afterwards.
func TestForkJoinPanicWaitsForWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var inside, left atomic.Bool
	release := make(chan struct{})
	defer func() {
		if recover() == nil {
			t.Fatal("the panic did not reach the caller")
		}
		if !left.Load() {
			t.Error("forkJoin returned while a worker was still running an index")
		}
	}()
	forkJoin(2, func(int) {
		// Whichever index it gets, the caller's goroutine is the one with
		// forkJoin on its stack (a worker's starts at its loop).
		buf := make([]byte, 4096)
		if !bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("engine.forkJoin(")) {
			inside.Store(true)
			<-release
			time.Sleep(20 * time.Millisecond)
			left.Store(true)
			return
		}
		for !inside.Load() {
			runtime.Gosched()
		}
		close(release)
		panic("the caller's index fails")
	})
}

// The idle workers' spin budget shrinks while the gaps between jobs are
// far longer than it (spinning through them is wasted), grows back when
// jobs arrive soon after a worker went to sleep, and stays within
// spinMin..spinFor.
func TestSpinBudgetAdapts(t *testing.T) {
	b := spinFor
	for range 20 {
		b = adapt(b, 10*time.Millisecond, true)
	}
	if b != spinMin {
		t.Fatalf("after long gaps the budget is %v, want %v", b, spinMin)
	}
	if got := adapt(b, time.Microsecond, false); got != b {
		t.Fatalf("a gap spun through changed the budget to %v", got)
	}
	for range 20 {
		b = adapt(b, b+time.Microsecond, true)
	}
	if b != spinFor {
		t.Fatalf("after near misses the budget is %v, want %v", b, spinFor)
	}
}

// A sleeping worker's wake-up is the cost of sleeping, not part of the gap
// it could have spun through: a job offered 40 µs after the worker slept
// doubles the budget however late the worker got to it (here 1 ms), and
// a job offered 10 ms after still halves it.
func TestSpinBudgetIgnoresWakeLatency(t *testing.T) {
	p := newPool()
	idle := time.Now().Add(-time.Millisecond)
	p.learn(spinMin, idle, &forkJob{offered: idle.Add(40 * time.Microsecond)})
	if got := time.Duration(p.spin.Load()); got != 2*spinMin {
		t.Fatalf("a job offered 40 µs after the worker slept left the budget at %v, want %v", got, 2*spinMin)
	}
	p.learn(spinFor, idle, &forkJob{offered: idle.Add(10 * time.Millisecond)})
	if got := time.Duration(p.spin.Load()); got != spinFor/2 {
		t.Fatalf("a job offered 10 ms after the worker slept left the budget at %v, want %v", got, spinFor/2)
	}
}

// TestForkJoinReusesJobs requires forkJoin's jobs to come from jobPool:
// made per fork, each was an allocation on every decoding step.
func TestForkJoinReusesJobs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var sum atomic.Int64
	fn := func(i int) { sum.Add(int64(i)) }
	allocs := testing.AllocsPerRun(200, func() { forkJoin(8, fn) })
	if allocs > 0.75 { // one a fork before; the race detector drops a quarter of sync.Pool's puts
		t.Errorf("forkJoin allocates %.2f objects a fork, want its job from jobPool", allocs)
	}
	if got, want := sum.Load(), int64(201*28); got != want {
		t.Errorf("indices summed to %d, want %d", got, want)
	}
}
