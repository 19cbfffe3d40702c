package engine

import "slices"

// Requests that arrive together often carry the same prompt: an RL or
// evaluation loop sending one request per sample, or clients retrying.
// Prefilling it once per request multiplies the prompt's cost by the
// number of requests, where num_samples pays it once. A job whose prompt
// has not begun therefore follows an active job with the same prompt and
// adapter: it runs no prompt rows, and when the leader's prompt is
// complete its samples start from copies of the leader's prompt cache and
// last logits. Those hold the same bits the follower would compute itself
// (the forward is independent of the batch), so sharing changes nothing a
// caller can see but time. A job that wants prompt logprobs prefills
// itself: they need every prompt position's logits, which a leader keeps
// only for its last.

// share assigns leaders to the jobs whose prompts have not begun, drops
// leaders that left before their prompts were complete (their followers
// prefill themselves), and returns the followers whose leaders already
// finished their prompts in an earlier step: those start in this step.
func (s *stepper) share() (ready []*job) {
	for _, j := range s.active {
		if j.seqs != nil {
			continue
		}
		if j.follow != nil && !slices.Contains(s.active, j.follow) {
			j.follow = nil
		}
		if j.follow == nil && j.cache == nil && j.prefilled == 0 && j.resp.PromptLogprobs == nil {
			j.follow = s.leaderFor(j)
		}
		if j.follow != nil && j.follow.seqs != nil {
			ready = append(ready, j)
		}
	}
	return ready
}

// leaderFor is a job admitted before j that prefills, or has prefilled,
// j's prompt with j's adapter and still holds it, or nil. Leaders come
// only from earlier jobs, which never follow later ones, so no follower
// follows another.
func (s *stepper) leaderFor(j *job) *job {
	p := j.req.Prompt
	for _, k := range s.active {
		if k == j {
			return nil
		}
		if k.follow != nil || k.m.lora != j.m.lora || !slices.Equal(k.req.Prompt, p) {
			continue
		}
		if k.seqs == nil || (k.cache != nil && k.cache.n >= len(p) && k.last != nil) {
			return k
		}
	}
	return nil
}

// startReady starts the samples of the followers in ready from their
// leaders' prompts and records their first tokens.
func (s *stepper) startReady(ready []*job) error {
	var work []func()
	for _, j := range ready {
		work = j.startFrom(j.follow, work)
	}
	if err := s.draw(work); err != nil {
		return err
	}
	for _, j := range ready {
		s.check(j)
	}
	return nil
}

// startFollowers starts the samples of the jobs that follow leader, whose
// prompt is now complete, and appends that work.
func (s *stepper) startFollowers(leader *job, work []func()) []func() {
	for _, f := range s.active {
		if f.follow == leader && f.seqs == nil {
			work = f.startFrom(leader, work)
		}
	}
	return work
}

// startFrom starts f's samples from leader's prompt cache and last logits.
func (f *job) startFrom(leader *job, work []func()) []func() {
	f.last, f.prefilled = leader.last, len(f.req.Prompt)
	return f.start(work, leader.cache, true)
}
