package export

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// unitPool runs jobs of independent units (an FP8 weight's scale blocks)
// on every core, for a whole shard: the reader queues a tensor's job and
// goes on to read the next while the cores make this one, and a worker
// that finds no unit left in one job goes on to the next job's instead of
// waiting for the others at a barrier. Per tensor, parallelUnits left a
// core idle while the first block was read and while the last unit ran,
// which for a run of one-block tensors (most MoE experts) was much of the
// time. Jobs are begun in the order queued, so the oldest (the one the
// shard's writer waits for) finishes first.
type unitPool struct {
	posts   chan *unitJob // each job posted once per worker that may help
	workers int
	wg      sync.WaitGroup
	failed  atomic.Pointer[error] // a unit's first error
}

// unitJob is n units of f; ready closes when all are done.
type unitJob struct {
	n          int
	f          func(s *scratch, unit int) error
	next, left atomic.Int64
	ready      chan struct{}
}

// scratch is one worker's buffers, kept across units and jobs.
type scratch struct {
	v, d []float32
	b    []byte
}

// get is the float32 scratch grown to nv and nd values.
func (s *scratch) get(nv, nd int) ([]float32, []float32) {
	if cap(s.v) < nv {
		s.v = make([]float32, nv)
	}
	if cap(s.d) < nd {
		s.d = make([]float32, nd)
	}
	return s.v[:nv], s.d[:nd]
}

// bytes is the byte scratch grown to n.
func (s *scratch) bytes(n int) []byte {
	if cap(s.b) < n {
		s.b = make([]byte, n)
	}
	return s.b[:n]
}

func newUnitPool() *unitPool {
	p := &unitPool{workers: runtime.GOMAXPROCS(0)}
	p.posts = make(chan *unitJob, 8*p.workers)
	p.wg.Add(p.workers)
	for range p.workers {
		go p.work()
	}
	return p
}

func (p *unitPool) work() {
	defer p.wg.Done()
	var s scratch
	for j := range p.posts {
		for i := int(j.next.Add(1)) - 1; i < j.n; i = int(j.next.Add(1)) - 1 {
			if err := j.f(&s, i); err != nil {
				p.failed.CompareAndSwap(nil, &err)
			}
			if j.left.Add(-1) == 0 {
				close(j.ready)
			}
		}
	}
}

// submit queues n units of f and returns the channel closed when all are
// done. A unit's error is kept for err and close.
func (p *unitPool) submit(n int, f func(s *scratch, unit int) error) <-chan struct{} {
	j := &unitJob{n: n, f: f, ready: make(chan struct{})}
	j.left.Store(int64(n))
	if n <= 0 {
		close(j.ready)
		return j.ready
	}
	for range min(p.workers, n) {
		p.posts <- j
	}
	return j.ready
}

// err is the first error of a unit done so far.
func (p *unitPool) err() error {
	if e := p.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// close waits for the jobs queued, stops the workers and returns the
// first error of a unit.
func (p *unitPool) close() error {
	close(p.posts)
	p.wg.Wait()
	return p.err()
}
