package engine

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// batcher interleaves the Sample calls on one base model (and on every
// adapter of it): one goroutine, started when a call arrives and gone when
// the last one leaves, runs steps in which a single forward pass carries
// the next token of every generating sequence plus a chunk of the prompts
// still being prefilled. Decoding is bound by reading the weights, so a
// step over many rows costs little more than a step over one; each row
// still has its own KV cache, sampler and random stream, and the kernels
// sum every output element in one fixed order whatever the batch, so a
// request gets the same bits as it would alone.
type batcher struct {
	mu      sync.Mutex
	queue   []*job // submitted, not yet admitted; FIFO
	running bool   // the stepping goroutine exists

	steps, rows atomic.Int64 // forward passes run and the rows they carried

	kv kvPool // finished sequences' caches, for the next ones
}

// countStep counts a step's forward pass and its rows.
func (b *batcher) countStep(units []*unit) {
	n := 0
	for _, u := range units {
		n += len(u.rows)
	}
	b.steps.Add(1)
	b.rows.Add(int64(n))
}

// maxBatchSeqs bounds the sequences admitted at once (each is one row of
// every step, and the step's scratch memory grows with rows). A request
// with more samples is admitted when it is alone.
const maxBatchSeqs = 64

// job is one Sample call in the batcher.
type job struct {
	ctx  context.Context
	m    *Model // with the request's adapter
	req  SampleRequest
	resp *SampleResponse

	cache     *kvCache  // the prompt's, from the first prompt chunk
	follow    *job      // the job whose prompt cache this one starts from (prefixshare.go)
	room      int       // positions each sample's cache starts with
	seed      uint64    // sample i draws from sampleSeed(seed, i)
	prefilled int       // prompt positions through the model
	last      []float32 // the last prompt position's logits (a copy: the workspace's are reused)
	seqs      []*seqRun // nil until the prompt is prefilled
	live      int       // sequences still generating

	// mu is held by the stepper while it calls the request's callbacks
	// (StopFunc, Decode) and writes its response, and by Sample when it
	// gives up, so no callback runs after Sample has returned.
	mu       sync.Mutex
	left     bool // Sample returned early (its context is done)
	finished bool
	err      error
	done     chan struct{}
}

func newJob(ctx context.Context, m *Model, req SampleRequest) *job {
	j := &job{ctx: ctx, m: m, req: req, done: make(chan struct{}),
		resp: &SampleResponse{Sequences: make([]Sequence, req.NumSamples)}}
	j.seed = randomSeed()
	if req.Seed != nil {
		j.seed = uint64(*req.Seed)
	}
	j.room = min(len(req.Prompt)+req.MaxTokens, len(req.Prompt)+256)
	if req.PromptLogprobs || req.TopKPromptLogprobs > 0 {
		j.resp.PromptLogprobs = make([]*float32, len(req.Prompt))
		if req.TopKPromptLogprobs > 0 {
			j.resp.TopKPromptLogprobs = make([][]TokenLogprob, len(req.Prompt))
		}
	}
	return j
}

// wait returns the job's result, or ctx's error as soon as ctx is done.
func (j *job) wait() (*SampleResponse, error) {
	select {
	case <-j.done:
	case <-j.ctx.Done():
		j.mu.Lock()
		j.left = !j.finished
		j.mu.Unlock()
		if j.left {
			return nil, fmt.Errorf("sampling cancelled: %w", j.ctx.Err())
		}
	}
	if p, ok := j.err.(*stepPanic); ok {
		panic(p) // a bug: surface it in the caller, as before batching
	}
	return j.resp, j.err
}

// finish delivers the job's outcome; the caller holds j.mu.
func (j *job) finish(err error) {
	if !j.finished {
		j.finished, j.err = true, err
		close(j.done)
	}
}

func (j *job) fail(err error) {
	j.mu.Lock()
	j.finish(err)
	j.mu.Unlock()
}

// stepPanic is a panic caught in the stepper, passed to the callers whose
// work it broke.
type stepPanic struct {
	val   any
	stack []byte
}

func (p *stepPanic) Error() string { return fmt.Sprintf("sampling panicked: %v\n%s", p.val, p.stack) }

func catch(err *error) {
	if v := recover(); v != nil {
		*err = &stepPanic{val: v, stack: debug.Stack()}
	}
}

// submit queues j and starts the stepper if none is running.
func (b *batcher) submit(j *job) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, j)
	if !b.running {
		b.running = true
		go (&stepper{b: b, m: j.m}).run()
	}
}

// stepper is the state of the stepping goroutine.
type stepper struct {
	b      *batcher
	m      *Model // any model of the base; forward takes adapters per row
	active []*job // admitted, in admission order
	ws     []*workspace
}

func (s *stepper) run() {
	s.b.gather()
	for s.admit() {
		if err := s.step(); err != nil {
			for _, j := range s.active {
				j.fail(err)
			}
			s.active = nil
		}
	}
}

// A new stepper, which finds the batch idle, first lets the requests that
// are already on their way reach the queue: goroutines that called Sample
// together (a client's concurrent requests, one handler each) are runnable
// but may not have run yet, and the first would otherwise prefill its
// prompt alone while the others wait a step and then catch up (more steps,
// and samples that finish at different steps). gather yields the core to
// them while each yield brings in more requests: it stops after
// gatherIdle yields in a row that brought none, when the queue holds
// maxBatchSeqs sequences, after gatherYields yields or after gatherFor.
// It never sleeps: with nothing else runnable a yield returns at once, so
// a request that comes alone starts within microseconds.
const (
	gatherIdle   = 2
	gatherYields = 16
)

// gatherFor bounds gather in time (a variable so a test can count
// admissions without depending on a loaded machine's timing).
var gatherFor = 100 * time.Microsecond

func (b *batcher) gather() {
	t0 := time.Now()
	last, idle := b.queuedSeqs(), 0
	for range gatherYields {
		if idle >= gatherIdle || last >= maxBatchSeqs || time.Since(t0) > gatherFor {
			return
		}
		runtime.Gosched()
		n := b.queuedSeqs()
		if n == last {
			idle++
		} else {
			idle = 0
		}
		last = n
	}
}

// queuedSeqs is the number of sequences the queued jobs ask for.
func (b *batcher) queuedSeqs() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, j := range b.queue {
		n += j.req.NumSamples
	}
	return n
}

// admit drops the jobs whose callers have gone and admits queued jobs while
// there is room. It reports false, and the stepper ends, when no job is
// left; that decision is made under b.mu, so a job submitted meanwhile
// starts a new stepper.
func (s *stepper) admit() bool {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	gone := func(j *job) bool {
		if err := j.ctx.Err(); err != nil {
			j.fail(fmt.Errorf("sampling cancelled: %w", err))
			return true
		}
		return j.finished
	}
	s.active = slices.DeleteFunc(s.active, func(j *job) bool {
		if gone(j) {
			s.release(j)
			return true
		}
		return false
	})
	b.queue = slices.DeleteFunc(b.queue, gone)
	seqs := 0
	for _, j := range s.active {
		seqs += j.req.NumSamples
	}
	for len(b.queue) > 0 && (len(s.active) == 0 || seqs+b.queue[0].req.NumSamples <= maxBatchSeqs) {
		seqs += b.queue[0].req.NumSamples
		s.active = append(s.active, b.queue[0])
		b.queue = b.queue[1:]
	}
	if len(s.active) == 0 {
		b.running = false
		b.queue = nil
		return false
	}
	return true
}

// release gives the caches of j, which has left the batch, to the pool:
// nothing reads them once it has, as followers start only from active
// leaders (share) and copy what they take (start).
func (s *stepper) release(j *job) {
	pool := &s.b.kv
	pool.put(j.cache)
	for _, sq := range j.seqs {
		if sq != nil {
			if sq.cache != j.cache {
				pool.put(sq.cache)
			}
			sq.cache = nil
		}
	}
	j.cache = nil
}
