package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// forkJoin runs fn(0), …, fn(n-1), each exactly once, on the calling
// goroutine and on whichever of the engine's worker goroutines join in,
// and returns when every call has returned. Indices are claimed one at a
// time, so a worker that joins late (or never) only means the caller does
// more of them; fn must not depend on which goroutine runs an index.
//
// Why a pool: decoding one token runs about 200 matrix products of
// 50-200 µs each. Starting a goroutine per product meant waking a parked
// thread each time, and on a virtual machine that wake-up took long
// enough that the two cores overlapped for only part of each product: the
// layers' products streamed their weights at 18 GB/s this way and 25 GB/s
// with workers that wait spinning (measured on the 0.6B shape in bf16).
// A worker spins for spinFor after its last job, yielding its core to any
// other runnable goroutine as it does, and then sleeps until the next.
//
// Callers on several goroutines at once are fine: a newer job replaces
// the one the workers are offered, and the older caller finishes its own
// indices itself. A panic in fn on the calling goroutine propagates after
// the workers inside the job have left it.
func forkJoin(n int, fn func(i int)) {
	if n <= 1 {
		if n == 1 {
			fn(0)
		}
		return
	}
	workPool.ensure(min(n, runtime.GOMAXPROCS(0)) - 1)
	var j *forkJob
	if poolJobs {
		j = jobPool.Get().(*forkJob)
	} else {
		j = newForkJob()
	}
	j.reset(fn, n)
	workPool.offer(j)
	defer func() {
		workPool.finish(j)
		j.release()
	}()
	j.run()
}

// jobPool keeps forkJoin's jobs: made per fork, each was an allocation,
// fresh memory on every decoding step (kvPool). A job goes back only when
// no worker holds it (refs), so a worker's pointer never meets a job
// reset for another fork.
var jobPool = sync.Pool{New: func() any { return newForkJob() }}

func newForkJob() *forkJob { return &forkJob{left: make(chan struct{}, 1)} }

// poolJobs has forkJoin take its jobs from jobPool (a benchmark's switch).
var poolJobs = true

// reset readies j, from jobPool, for a fork of fn over n indices. A
// worker that still looks at j from an earlier offer holds no reference
// yet: it reads no field before it has one and finds j offered again
// (hold).
func (j *forkJob) reset(fn func(i int), n int) {
	j.fn, j.n = fn, int64(n)
	j.next.Store(0)
	j.state.Store(0)
	j.parked.Store(false)
	select { // a last worker's wake-up the caller did not wait for
	case <-j.left:
	default:
	}
}

// release drops the caller's function and returns j to jobPool when no
// worker holds it; one that does (between its look at the offer and its
// last step) leaves j to the collector.
func (j *forkJob) release() {
	j.fn = nil
	if poolJobs && j.refs.Load() == 0 {
		jobPool.Put(j)
	}
}

// hold takes a reference to j, which p offered when the worker looked,
// and reports whether p still offers it: only then may the worker read
// j's fields (j may have gone back to jobPool and been reset since).
func (p *workerPool) hold(j *forkJob) bool {
	j.refs.Add(1)
	if p.cur.Load() == j {
		return true
	}
	j.refs.Add(-1)
	return false
}

// spinFor is the longest an idle worker keeps looking for the next job
// before it sleeps: longer than the gaps between the products of a
// decoding step (norms, attention, sampling), short enough that an idle
// server stops using CPU at once. The pool's budget (workerPool.spin)
// starts there and follows the gaps it sees, down to spinMin: a training
// step of the tiny models left most gaps longer than spinFor (the serial
// parts between products too small to split), and each of those spun its
// full 500 µs, a quarter of the step's CPU samples (issue 34).
const (
	spinFor = 500 * time.Microsecond
	spinMin = 25 * time.Microsecond
)

// adapt returns the next spin budget after a gap between a worker's jobs:
// a gap it slept through that ended soon after it slept (within the budget
// again) doubles the budget, a gap much longer than the budget halves it,
// within spinMin..spinFor. Gaps it spun through leave it as it is.
// The gap ends when the next job is offered, not when the sleeper wakes
// (learn).
func adapt(budget, gap time.Duration, slept bool) time.Duration {
	switch {
	case !slept:
		return budget
	case gap < 2*budget:
		return min(2*budget, spinFor)
	case gap > 4*budget:
		return max(budget/2, spinMin)
	}
	return budget
}

// closed marks a job whose caller has stopped waiting for workers.
const closed = 1 << 62

type forkJob struct {
	fn      func(i int)
	n       int64
	seq     atomic.Uint64 // read by idle workers without a hold
	offered time.Time     // when offer made it the pool's job
	next    atomic.Int64  // next index to claim
	// state counts the workers inside the job, plus closed once the caller
	// is done with its own indices; no worker enters a closed job.
	state atomic.Int64
	// parked is set by a caller about to sleep on left until the last
	// worker leaves (finish), which that worker then signals.
	parked atomic.Bool
	left   chan struct{} // one slot, made with the job
	// refs counts the workers that hold j, from the look at the pool's
	// offer that found it (hold) to their last step in it (worker).
	refs atomic.Int32
}

// finishSpin is how long a caller whose own indices are done spins for
// the workers still inside its job before it sleeps until the last one
// leaves. Spinning (yielding its core every few dozen checks, a trip
// through the scheduler's locks each time) was 6-9% of a training step's
// CPU samples: a product's last index can take a large share of the job,
// and on a loaded machine a worker that lost its core longer.
const finishSpin = 20 * time.Microsecond

// leave takes a worker out of j, waking the caller if it sleeps waiting
// for the last one.
func (j *forkJob) leave() {
	if j.state.Add(-1) == closed && j.parked.Load() {
		j.left <- struct{}{}
	}
}

// run claims and calls indices until none is left.
func (j *forkJob) run() {
	for {
		i := j.next.Add(1) - 1
		if i >= j.n {
			return
		}
		j.fn(int(i))
	}
}

// enter reports whether a worker may take part in j.
func (j *forkJob) enter() bool {
	for {
		s := j.state.Load()
		if s&closed != 0 {
			return false
		}
		if j.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

type workerPool struct {
	cur      atomic.Pointer[forkJob] // the job offered to workers, or nil
	seq      atomic.Uint64
	started  atomic.Int32 // worker goroutines running
	spin     atomic.Int64 // idle workers' spin budget, ns (adapt); 0: spinFor
	sleeping atomic.Int32
	mu       sync.Mutex // guards starting workers and the sleepers' cond
	wake     *sync.Cond
}

var workPool = newPool()

func newPool() *workerPool {
	p := &workerPool{}
	p.wake = sync.NewCond(&p.mu)
	return p
}

// maxWorkers bounds the pool whatever GOMAXPROCS says.
const maxWorkers = 64

// ensure starts workers until there are at least k.
func (p *workerPool) ensure(k int) {
	k = min(k, maxWorkers)
	if int(p.started.Load()) >= k {
		return
	}
	p.mu.Lock()
	for int(p.started.Load()) < k {
		p.started.Add(1)
		go p.worker()
	}
	p.mu.Unlock()
}

// offer makes j the job workers join, waking sleeping ones.
func (p *workerPool) offer(j *forkJob) {
	j.offered = time.Now()
	j.seq.Store(p.seq.Add(1))
	p.cur.Store(j)
	if p.sleeping.Load() > 0 {
		p.mu.Lock()
		p.wake.Broadcast()
		p.mu.Unlock()
	}
}

// finish closes j to workers, withdraws the offer (so the pool holds no
// reference to the caller's data) and waits for the workers inside j.
// It spins for finishSpin, then sleeps until the last worker leaves: the
// caller sets parked before its last look at state and the worker reads
// parked after its decrement (both sequentially consistent), so at least
// one of them sees the other, and left's one slot keeps the worker from
// blocking when both do.
func (p *workerPool) finish(j *forkJob) {
	j.state.Or(closed)
	p.cur.CompareAndSwap(j, nil)
	var t0 time.Time
	for spins := 0; j.state.Load()&^closed != 0; spins++ {
		if spins%64 != 63 {
			continue
		}
		if t0.IsZero() {
			t0 = time.Now()
		} else if time.Since(t0) > finishSpin {
			j.parked.Store(true)
			if j.state.Load()&^closed != 0 {
				<-j.left
			}
			return
		}
		runtime.Gosched()
	}
}

func (p *workerPool) worker() {
	var last uint64
	for {
		j := p.next(last) // held (hold)
		last = j.seq.Load()
		if j.enter() {
			j.run()
			j.leave()
		}
		j.refs.Add(-1)
	}
}

// next waits for a job newer than seq last and returns it held (hold):
// spinning for the pool's budget, then asleep until offer wakes it.
func (p *workerPool) next(last uint64) *forkJob {
	// An idle worker's spin only reads (the job's line is the caller's
	// next and state); it holds a job that looks newer, then looks again.
	newer := func() *forkJob {
		j := p.cur.Load()
		if j == nil || j.seq.Load() == last || !p.hold(j) {
			return nil
		}
		if j.seq.Load() == last {
			j.refs.Add(-1)
			return nil
		}
		return j
	}
	budget := time.Duration(p.spin.Load())
	if budget == 0 {
		budget = spinFor
	}
	t0 := time.Now()
	for spins := 0; ; spins++ {
		if j := newer(); j != nil {
			return j
		}
		if spins%64 == 63 {
			if time.Since(t0) > budget {
				break
			}
			runtime.Gosched()
		}
	}
	j := p.sleep(newer)
	p.learn(budget, t0, j)
	return j
}

// learn sets the spin budget after a worker that began waiting at idle
// slept until j came. The gap it could have spun through ended when j was
// offered; the wake-up after that is what sleeping cost, not part of the
// gap. Counted in it (as it was), the ~63 µs a wake-up took on this KVM
// machine made every gap of a decoding step look longer than twice
// spinMin, so the budget sat at spinMin and the worker slept before
// nearly every product of a token (issue 34;
// docs/engine-decoding.md, "Around the forks (decodefork)").
func (p *workerPool) learn(budget time.Duration, idle time.Time, j *forkJob) {
	p.spin.Store(int64(adapt(budget, j.offered.Sub(idle), true)))
}

// sleep waits for newer to return a job, asleep until offer wakes it.
func (p *workerPool) sleep(newer func() *forkJob) *forkJob {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sleeping.Add(1)
	defer p.sleeping.Add(-1)
	for {
		if j := newer(); j != nil {
			return j
		}
		p.wake.Wait()
	}
}

// forkJoinUnits runs fn on units 0..n-1 with workers goroutines, each
// taking the next unit not yet taken (fn gets the unit and the worker's
// index, for its scratch), so unequal units still keep every core busy.
func forkJoinUnits(workers, n int, fn func(u, wk int)) {
	var next atomic.Int64
	forkJoin(workers, func(wk int) {
		for u := next.Add(1) - 1; u < int64(n); u = next.Add(1) - 1 {
			fn(int(u), wk)
		}
	})
}
