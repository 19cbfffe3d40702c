package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Options adjusts a Run.
type Options struct {
	// Session configures the session the run opens (tags, project,
	// timings); its OnState also receives the run's sampling states.
	Session tinkerapi.SessionOptions
	// OnProgress is called once before the first row and after every
	// row written, one call at a time; it must not block for long.
	OnProgress func(Progress)
}

// Progress is the state of a run for a progress bar.
type Progress struct {
	Done    int // rows of the job in the output file
	Total   int // rows of the job
	Resumed int // rows found in the file when the run started
	Elapsed time.Duration
	Rate    float64       // rows per second written by this run
	ETA     time.Duration // 0 until a row has been written
}

// Result describes a finished or stopped run.
type Result struct {
	Output  string
	Seed    int64 // the job's base seed (chosen at random on a new file without one)
	Total   int   // rows of the job
	Resumed int   // rows already in the file when the run started
	Written int   // rows this run added
	// Remaining rows are still to sample; a run that stopped early says
	// so in its error, and the same job run again samples just these.
	Remaining int
	TornBytes int // an incomplete last line (a crash mid-write) that was cut off
	// PushBacks is how often the server's backpressure halved the rows in
	// flight; MinConcurrency is the lowest bound it reached.
	PushBacks, MinConcurrency int
	Elapsed                   time.Duration
	Models                    []ModelSummary
}

// StoppedError is a run that ended before every row was sampled: it was
// cancelled (Err is the context's error) or a row failed. The rows written
// so far stay in the file.
type StoppedError struct {
	Output           string
	Remaining, Total int
	Err              error
}

func (e *StoppedError) Error() string {
	return fmt.Sprintf("%v; %d of %d rows still to sample: run the same job again to resume (finished rows are kept in %s)",
		e.Err, e.Remaining, e.Total, e.Output)
}

func (e *StoppedError) Unwrap() error { return e.Err }

// task is one row to sample.
type task struct {
	m      *model
	prompt *Prompt
	sample int
}

// Run samples the job's missing rows into its output file. A job whose
// rows are all present returns at once without contacting the server.
// On cancellation it stops submitting, abandons rows in flight (nothing
// partial is written) and returns the Result with a *StoppedError.
func Run(ctx context.Context, c *tinkerapi.Client, job Job, opts Options) (*Result, error) {
	if err := job.validate(); err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	samples := max(job.NumSamples, 1)
	conc := job.Concurrency
	if conc == 0 {
		conc = DefaultConcurrency
	}
	start := time.Now()
	ex, err := readExisting(job.Output)
	if err != nil {
		return nil, err
	}
	seed, err := resolveSeed(&job, ex)
	if err != nil {
		return nil, err
	}
	res := &Result{Output: job.Output, Seed: seed, Total: len(job.Models) * len(job.Prompts) * samples,
		TornBytes: ex.torn, MinConcurrency: conc}
	var todo []task
	byModel := map[string]*model{}
	for pi := range job.Prompts {
		for _, name := range job.Models {
			for i := range samples {
				if _, done := ex.rows[key{name, job.Prompts[pi].ID, i}]; done {
					res.Resumed++
					continue
				}
				if byModel[name] == nil {
					byModel[name] = &model{name: name}
				}
				todo = append(todo, task{byModel[name], &job.Prompts[pi], i})
			}
		}
	}
	finish := func() *Result {
		res.Remaining = res.Total - res.Resumed - res.Written
		res.Elapsed = time.Since(start)
		res.Models = summarize(&job, ex.rows, samples)
		return res
	}
	if len(todo) == 0 {
		if ex.torn > 0 {
			if err := openAndClose(job.Output, ex); err != nil {
				return nil, err
			}
		}
		return finish(), nil
	}
	out, err := openAppender(job.Output, ex)
	if err != nil {
		return nil, err
	}
	defer out.close()

	lim := newLimiter(conc)
	so := opts.Session
	userState := so.OnState
	so.OnState = func(st tinkerapi.State) {
		if st.Kind == "Sample" && st.Status == tinkerapi.StatusPaused {
			lim.pushBack()
		}
		if userState != nil {
			userState(st)
		}
	}
	sess, err := c.CreateSession(ctx, so)
	if err != nil {
		return nil, fmt.Errorf("batch: %w", err)
	}
	defer sess.Close()
	for _, name := range job.Models {
		if byModel[name] == nil {
			continue
		}
		m, err := openModel(ctx, sess, name)
		if err != nil {
			return nil, fmt.Errorf("batch: %w", err)
		}
		*byModel[name] = *m
	}
	// Build every request first, so a bad prompt fails before any sampling.
	type pair struct {
		m *model
		p *Prompt
	}
	reqs := map[pair]tinkerapi.SampleRequest{}
	for _, t := range todo {
		k := pair{t.m, t.prompt}
		if _, ok := reqs[k]; ok {
			continue
		}
		if reqs[k], err = t.m.request(t.prompt, &job.Params); err != nil {
			return nil, fmt.Errorf("batch: %w", err)
		}
	}

	r := runner{out: out, lim: lim, sess: sess, seed: seed, res: res, rows: ex.rows, start: start, onProgress: opts.OnProgress}
	r.progress()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	tasks := make(chan task)
	go func() {
		defer close(tasks)
		for _, t := range todo {
			select {
			case tasks <- t:
			case <-runCtx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range tasks {
				if err := r.do(runCtx, t, reqs[pair{t.m, t.prompt}]); err != nil {
					r.fail(runCtx, err)
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	res.PushBacks, res.MinConcurrency = lim.stats()
	finish()
	if err := r.firstErr; err != nil {
		return res, &StoppedError{Output: job.Output, Remaining: res.Remaining, Total: res.Total, Err: err}
	}
	if err := ctx.Err(); err != nil && res.Remaining > 0 {
		return res, &StoppedError{Output: job.Output, Remaining: res.Remaining, Total: res.Total, Err: err}
	}
	return res, nil
}

// openAndClose cuts a torn tail off a file that needs no new rows.
func openAndClose(path string, ex *existing) error {
	a, err := openAppender(path, ex)
	if err != nil {
		return err
	}
	return a.close()
}

// runner is the shared state of a run's workers.
type runner struct {
	out        *appender
	lim        *limiter
	sess       *tinkerapi.Session
	seed       int64
	start      time.Time
	onProgress func(Progress)

	mu       sync.Mutex // guards the fields below and serialises onProgress
	res      *Result
	rows     map[key]rowStats
	firstErr error
}

// do samples and writes one row.
func (r *runner) do(ctx context.Context, t task, req tinkerapi.SampleRequest) error {
	if err := r.lim.acquire(ctx); err != nil {
		return nil // cancelled: the run reports what remains
	}
	rowSeed := RowSeed(r.seed, t.m.name, t.prompt.ID, t.sample)
	req.Seed = &rowSeed
	resp, err := r.sess.Sample(ctx, t.m.sampler, req)
	r.lim.release(err == nil)
	if err != nil {
		return fmt.Errorf("sample prompt %s on %s: %w", t.prompt.ID, t.m.name, err)
	}
	if len(resp.Sequences) != 1 {
		return fmt.Errorf("sample prompt %s on %s: the server sent %d sequences for 1", t.prompt.ID, t.m.name, len(resp.Sequences))
	}
	seq := resp.Sequences[0]
	row := Row{Model: t.m.name, PromptID: t.prompt.ID, Sample: t.sample, Seed: rowSeed, Text: t.m.decode(seq.Tokens),
		Tokens: seq.Tokens, Logprobs: seq.Logprobs, StopReason: seq.StopReason}
	if row.Tokens == nil {
		row.Tokens = []int{}
	}
	if err := r.out.write(&row); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows[row.key()] = statsOf(&row)
	r.res.Written++
	r.progress()
	return nil
}

// fail keeps the first error that is not a consequence of the run's own
// cancellation (after which rows in flight fail with context errors).
func (r *runner) fail(ctx context.Context, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.firstErr == nil && (ctx.Err() == nil || !errors.Is(err, ctx.Err())) {
		r.firstErr = err
	}
}

// progress reports; r.mu is held (or the workers have not started).
func (r *runner) progress() {
	if r.onProgress == nil {
		return
	}
	el := time.Since(r.start)
	p := Progress{Done: r.res.Resumed + r.res.Written, Total: r.res.Total, Resumed: r.res.Resumed, Elapsed: el}
	if r.res.Written > 0 && el > 0 {
		p.Rate = float64(r.res.Written) / el.Seconds()
		p.ETA = time.Duration(float64(p.Total-p.Done) / p.Rate * float64(time.Second))
	}
	r.onProgress(p)
}
