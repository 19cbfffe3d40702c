package engine

import (
	"runtime"
	"slices"
)

// unit is one sequence's share of a step: a chunk of a prompt being
// prefilled, or the next token of a sample being generated.
type unit struct {
	j      *job
	s      *seqRun // nil for a prompt chunk
	rows   []row
	logits [][]float32 // per row after the forward (nil where not asked)
}

// step runs one forward pass over every active job's rows, then lets each
// sequence pick its token and each job check its stop conditions.
// Followers whose leader's prompt was complete before this step (they
// arrived while it was prefilled) draw their first tokens first, so their
// next token joins this step's forward pass: requests with one prompt that
// arrive during its prefill then decode in the same steps as num_samples
// does, not one step behind the request that led it.
func (s *stepper) step() error {
	if err := s.startReady(s.share()); err != nil {
		return err
	}
	units := s.plan()
	if len(units) == 0 {
		return nil
	}
	if err := s.forward(units); err != nil {
		return err
	}
	s.b.countStep(units)
	if err := s.pick(units); err != nil {
		return err
	}
	for _, j := range s.active {
		s.check(j)
	}
	return nil
}

// plan lists the step's units: the next token of every generating
// sequence, and prompt positions of the jobs still prefilling, oldest
// first, at most prefillChunk of each job. While nothing generates, a step
// takes up to prefillBatch positions, so requests admitted together are
// prefilled in one forward pass and then decode together. While some
// sequence generates, each waiting prompt adds the model's sharedPrefill
// positions to the step (prefillChunk at most in all), so a long prompt
// delays the others' tokens by about one decoding step per step rather
// than by its whole length, and several prompts arriving just after one
// another catch up with the batch in a few steps instead of one by one.
func (s *stepper) plan() []*unit {
	var units []*unit
	generating, waiting := false, 0
	for _, j := range s.active {
		switch {
		case j.finished:
		case j.seqs != nil:
			generating = true
		case j.follow == nil:
			waiting++
		}
	}
	budget := prefillBatch
	if generating {
		budget = min(prefillChunk, s.m.sharedPrefill()*waiting)
	}
	for _, j := range s.active {
		switch {
		case j.finished: // failed in this step's startReady
		case j.seqs != nil:
			for _, sq := range j.seqs {
				if sq.out.StopReason == "" {
					r := row{seq: sq.cache, token: sq.out.Tokens[len(sq.out.Tokens)-1], pos: sq.cache.n, logits: true, lora: j.m.lora}
					units = append(units, &unit{j: j, s: sq, rows: []row{r}})
				}
			}
		case j.follow != nil: // its leader prefills the prompt
		case budget > 0:
			u := j.promptChunk(min(budget, prefillChunk))
			budget -= len(u.rows)
			units = append(units, u)
		}
	}
	return units
}

// prefillBatch bounds the prompt positions of one step while nothing
// generates: 8 requests of 64-token prompts, or 4 chunks of long ones.
const prefillBatch = 4 * prefillChunk

// sharedPrefillWork is the multiply-adds a step spends on prompts while
// other sequences generate: about 50 ms at the engine's 150 GFLOP/s, the
// time a decoding step of a 0.6B model takes to read its weights (a
// variable so a test can make a tiny model behave like a large one).
var sharedPrefillWork = 4 << 30

// sharedPrefill is how many prompt positions fit sharedPrefillWork on this
// model (its matrices' multiply-adds per position), at least 16 so
// prefill keeps batching: all 128 on small models, 16 on a 0.6B one.
func (m *Model) sharedPrefill() int {
	c := m.cfg
	h, qd, kvd := c.Hidden, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	perPos := max(1, c.Layers*(2*h*qd+2*h*kvd+3*h*c.Intermediate))
	return min(prefillChunk, max(16, sharedPrefillWork/perPos))
}

// promptChunk is the job's next (at most n) prompt positions. The prompt's
// cache is made with the first chunk, so queued jobs hold no cache.
func (j *job) promptChunk(n int) *unit {
	p := j.req.Prompt
	if j.cache == nil {
		if j.req.NumSamples > 1 {
			j.cache = j.m.promptCache(len(p)) // samples start from copies or mappings of it
		} else {
			j.cache = j.m.sampleCache(len(p), j.room, len(p)+min(j.req.MaxTokens, kvAliasRoom))
		}
	}
	lo, hi := j.prefilled, min(j.prefilled+n, len(p))
	wantPrompt := j.resp.PromptLogprobs != nil
	u := &unit{j: j, rows: make([]row, 0, hi-lo)}
	for i := lo; i < hi; i++ {
		u.rows = append(u.rows, row{seq: j.cache, token: p[i], pos: i, lora: j.m.lora,
			logits: i == len(p)-1 || (wantPrompt && i+1 < len(p))})
	}
	return u
}

// forward runs the units' rows. Small models split them into groups that
// run their own forward on each core (their products are too small to
// split); large ones run one batch and split each product across cores.
func (s *stepper) forward(units []*unit) error {
	parts := min(s.m.groups(), len(units))
	for len(s.ws) < parts {
		s.ws = append(s.ws, &workspace{})
	}
	rows := make([][]row, parts)
	owners := make([][]*unit, parts)
	for _, u := range units {
		p := 0
		for q := range rows {
			if len(rows[q]) < len(rows[p]) {
				p = q
			}
		}
		rows[p] = append(rows[p], u.rows...)
		owners[p] = append(owners[p], u)
	}
	run := func(p int) (err error) {
		defer catch(&err)
		out := s.m.forward(s.ws[p], rows[p])
		for _, u := range owners[p] {
			u.logits, out = out[:len(u.rows)], out[len(u.rows):]
		}
		return nil
	}
	return parallel(parts, run)
}

// parallel runs fn(0..n-1) with forkJoin and returns the first error.
func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	forkJoin(n, func(i int) { errs[i] = fn(i) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pick turns the step's logits into prompt logprobs and tokens: each
// generating sequence draws its next token with its own sampler and random
// stream, and a job whose prompt is now complete starts its samples from
// the last prompt position.
func (s *stepper) pick(units []*unit) error {
	var work []func()
	for _, u := range units {
		if u.s != nil {
			sq, logits := u.s, u.logits[0]
			work = append(work, func() { sq.next, sq.nextLogprob = sq.sm.pick(logits, sq.rng) })
			continue
		}
		work = s.prefilled(u, work)
	}
	return s.draw(work)
}

// draw runs the draws in work. They are independent, so large
// vocabularies spread them over the cores.
func (s *stepper) draw(work []func()) error {
	workers := 1
	if len(work)*s.m.cfg.VocabSize >= 4*parallelMinWork {
		workers = min(runtime.GOMAXPROCS(0), len(work))
	}
	return parallel(workers, func(w int) (err error) {
		defer catch(&err)
		for i := w; i < len(work); i += workers {
			work[i]()
		}
		return nil
	})
}

// prefilled records a prompt chunk's logits (prompt logprobs, and the
// last position's, which the samples start from) and, once the prompt is
// complete, starts the job's samples. It appends that work.
func (s *stepper) prefilled(u *unit, work []func()) []func() {
	j := u.j
	p := j.req.Prompt
	for i, r := range u.rows {
		logits := u.logits[i]
		if r.pos == len(p)-1 {
			j.last = slices.Clone(logits)
		}
		if j.resp.PromptLogprobs != nil && r.pos+1 < len(p) {
			pos := r.pos + 1
			work = append(work, func() { j.m.promptLogprobs(j.resp, logits, pos, j.req) })
		}
	}
	j.prefilled = u.rows[len(u.rows)-1].pos + 1
	if j.prefilled < len(p) {
		return work
	}
	return s.startFollowers(j, j.start(work, j.cache, false))
}

// start creates the job's samples from the prompt cache src, each with its
// own copy of it when there are several or src is another job's, and
// appends their first draws (from the last prompt position's logits) to
// work.
func (j *job) start(work []func(), src *kvCache, shared bool) []func() {
	n := j.req.NumSamples
	if j.req.MaxTokens == 0 {
		j.seqs = []*seqRun{} // prefilled, nothing to generate
		for i := range j.resp.Sequences {
			j.resp.Sequences[i] = Sequence{Tokens: []int{}, Logprobs: []float32{}, StopReason: StopReasonLength}
		}
		return work
	}
	j.seqs, j.live = make([]*seqRun, n), n
	// Copies of the prompt map one memory file where they can (kvalias.go),
	// with room for every position they may generate: growth would copy.
	var alias *kvAliasSrc
	p := len(j.req.Prompt)
	if n > 1 || shared {
		alias = src.aliasFor(p)
	}
	if n > 1 && !shared {
		src.samplesStarted(alias, p) // j.cache, which nothing computes in again
	}
	if shared {
		src.followed(alias, p) // the leader's cache
	}
	for i := range n {
		work = append(work, func() {
			c := src
			if n > 1 || shared {
				c = c.cloneAliased(alias, p, j.room, p+min(j.req.MaxTokens, kvAliasRoom), j.m.kvPool())
			}
			sq := &seqRun{cache: c, rng: newRNG(sampleSeed(j.seed, i)), sm: newSampler(j.m.cfg.VocabSize, j.req), out: &j.resp.Sequences[i]}
			sq.out.Tokens = make([]int, 0, j.req.MaxTokens)
			sq.out.Logprobs = make([]float32, 0, j.req.MaxTokens)
			sq.next, sq.nextLogprob = sq.sm.pick(j.last, sq.rng)
			j.seqs[i] = sq
		})
	}
	return work
}

// check appends the tokens a job's sequences just drew and asks its stop
// conditions, under j.mu; a job whose sequences have all stopped is done.
// A panic in the request's own callbacks fails only that request.
func (s *stepper) check(j *job) {
	if j.seqs == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.left || j.finished {
		return // admit drops it
	}
	var err error
	func() {
		defer catch(&err)
		for _, sq := range j.seqs {
			if sq.out.StopReason != "" {
				continue
			}
			sq.out.Tokens = append(sq.out.Tokens, sq.next)
			sq.out.Logprobs = append(sq.out.Logprobs, float32(sq.nextLogprob))
			if reason := j.m.stopReason(&j.req, sq.out.Tokens); reason != "" {
				sq.out.StopReason = reason
				j.live--
			}
		}
	}()
	if err != nil || j.live == 0 {
		j.finish(err)
	}
}
