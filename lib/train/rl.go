package train

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// RL defaults, shared by rl() and `tinker train rl`.
const (
	DefaultGroupSize   = 8
	DefaultRLSteps     = 20
	DefaultRLMaxTokens = 64
	DefaultRLLoss      = "importance_sampling"
)

// samplerTTL keeps the per-step policy snapshots RL samples from for a
// day at most: they are needed only while the step runs, and each is
// deleted once the next exists (unless the run keeps every checkpoint).
const samplerTTL = 24 * 3600

// Prompt is one RL prompt: plain text (encoded with the tokenizer) or a
// conversation (rendered with the generation prompt).
type Prompt struct {
	Text     string
	Messages []chat.Message
	Where    string
}

// Prompts reads rows that are strings or {"messages": [...]} objects.
func Prompts(rows []Row) ([]Prompt, error) {
	out := make([]Prompt, len(rows))
	for i, r := range rows {
		out[i].Where = r.Where
		if json.Unmarshal(r.JSON, &out[i].Text) == nil {
			if out[i].Text == "" {
				return nil, fmt.Errorf("%s: the prompt is empty", r.Where)
			}
			continue
		}
		m, err := r.fields()
		if err != nil {
			return nil, fmt.Errorf("%s: a prompt is a string or a {\"messages\": [...]} object, got %s", r.Where, jsonKind(r.JSON))
		}
		if out[i].Messages, err = r.messages(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RLOptions is one RL run.
type RLOptions struct {
	RunOptions
	BaseModel string // or a state to start from, as in SFTOptions
	Prompts   []Prompt
	// Reward scores a completion of Prompts[prompt]; it is called on the
	// caller's goroutine, one completion at a time.
	Reward       func(prompt int, completion string) (float64, error)
	Lora         tinkerapi.LoraConfig
	Renderer     string
	GroupSize    int // completions per prompt
	BatchSize    int // prompts per step; 0: all
	Steps        int
	MaxTokens    int
	Temperature  float64
	Loss         string  // importance_sampling, ppo or cispo
	LearningRate float64 // 0: lr_for(BaseModel)
	// DropEqualGroups drops the groups whose rewards are all equal (their
	// advantages are 0) and skips the optimizer step when none is left.
	// By default, as in the cookbook, they are trained on (with advantage
	// 0) and every step steps, so Adam's momentum carries on.
	DropEqualGroups bool
}

// RLMetrics is one step of RL.
type RLMetrics struct {
	Step         int     `json:"step"`
	MeanReward   float64 `json:"mean_reward"`    // over every completion sampled
	Loss         float64 `json:"loss"`           // per trained token
	Tokens       int     `json:"tokens"`         // completion tokens sampled
	Trained      int     `json:"num_trained"`    // completions trained on
	Skipped      int     `json:"skipped_groups"` // dropped by DropEqualGroups
	LearningRate float64 `json:"learning_rate"`
	Seconds      float64 `json:"time"`
}

func (m RLMetrics) StepNumber() int                     { return m.Step }
func (m RLMetrics) Headline() (string, float64)         { return "mean_reward", m.MeanReward }
func (m RLMetrics) Throughput() (tokens int, s float64) { return m.Tokens, m.Seconds }

// RLResult is the outcome of an RL run.
type RLResult = Result[RLMetrics]

func (o *RLOptions) check() error {
	switch o.Loss {
	case "importance_sampling", "ppo", "cispo":
	default:
		return fmt.Errorf("loss must be \"importance_sampling\", \"ppo\" or \"cispo\", got %q", o.Loss)
	}
	switch {
	case o.GroupSize < 2:
		return fmt.Errorf("group_size must be at least 2 (advantages compare completions of one prompt)")
	case o.BatchSize < 0 || o.SaveEvery < 0 || o.MaxSteps < 0 || o.KeepStates < 0:
		return fmt.Errorf("batch_size, save_every, max_steps and keep_states must not be negative")
	case o.Steps < 1:
		return fmt.Errorf("steps must be at least 1")
	case o.MaxTokens < 1:
		return fmt.Errorf("max_tokens must be at least 1")
	case !positive(o.Temperature):
		return fmt.Errorf("temperature must be positive (RL needs varied completions)")
	case o.LearningRate != 0 && !positive(o.LearningRate): // 0: the default
		return fmt.Errorf("learning_rate must be positive")
	case o.Lora.Rank < 1:
		return fmt.Errorf("rank must be positive")
	case len(o.Prompts) == 0:
		return fmt.Errorf("no prompts")
	}
	return nil
}

// rlConfig is log_dir/config.json of RL. The reward function cannot be
// compared: resuming with another one is the caller's choice.
type rlConfig struct {
	BaseModel     string  `json:"base_model"`
	From          string  `json:"from,omitempty"`
	PromptsSHA256 string  `json:"prompts_sha256"`
	Rank          int     `json:"rank"`
	Seed          *int64  `json:"seed"`
	Renderer      string  `json:"renderer"`
	GroupSize     int     `json:"group_size"`
	BatchSize     int     `json:"batch_size"`
	Steps         int     `json:"steps"`
	MaxTokens     int     `json:"max_tokens"`
	Temperature   float64 `json:"temperature"`
	Loss          string  `json:"loss"`
	LearningRate  float64 `json:"learning_rate"`
	DropEqual     bool    `json:"drop_equal_groups,omitempty"`
	SaveEvery     int     `json:"save_every"`
	Name          string  `json:"name"`
}

// rlPrompt is a prompt ready for sampling.
type rlPrompt struct {
	tokens      []int
	stopTokens  []int
	stopStrings []string
}

// RL runs reinforcement learning with group-relative advantages (see the
// rl() builtin's documentation).
func RL(ctx context.Context, s SamplingSession, o RLOptions) (*RLResult, error) {
	if o.BatchSize == 0 {
		o.BatchSize = len(o.Prompts)
	}
	if err := o.check(); err != nil {
		return nil, userErr(err.Error())
	}
	st, err := begin(ctx, s, &o.RunOptions, &o.BaseModel, &o.LearningRate, &o.Lora, models.LoRALearningRate)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.ForModel(ctx, o.BaseModel)
	if err != nil {
		return nil, userErr(err.Error())
	}
	prompts, renderer, err := renderPrompts(ctx, tok, o.BaseModel, o.Renderer, o.Prompts)
	if err != nil {
		return nil, userErr(err.Error())
	}
	cfg := rlConfig{BaseModel: o.BaseModel, From: st.from, PromptsSHA256: promptHash(prompts), Rank: o.Lora.Rank, Seed: o.Lora.Seed, Renderer: renderer,
		GroupSize: o.GroupSize, BatchSize: o.BatchSize, Steps: o.Steps, MaxTokens: o.MaxTokens, Temperature: o.Temperature, Loss: o.Loss,
		LearningRate: o.LearningRate, DropEqual: o.DropEqualGroups, SaveEvery: o.SaveEvery, Name: o.Name}
	run, err := newRunner[RLMetrics](ctx, &o.RunOptions, st, o.Steps, cfg, "rl")
	if err != nil {
		return nil, logDirErr(err)
	}
	if run.done() {
		return run.res, nil
	}
	if err := run.open(ctx, s, o.Lora, "tinker rl"); err != nil {
		return nil, run.stopped(ctx, err)
	}
	defer run.close()
	l := &rlLoop{runner: run, o: &o, s: s, tok: tok, prompts: prompts}
	if o.Lora.Seed != nil {
		l.seed = uint64(*o.Lora.Seed)
	}
	defer func() { l.keep.replaced(l.wait, l.policy) }() // the final sampler weights stay
	return run.drive(ctx, l)
}

// renderPrompts encodes text prompts and renders conversations (with the
// renderer's stop conditions); renderer is the one used, "" for none.
func renderPrompts(ctx context.Context, tok *tokenizer.Tokenizer, base, name string, ps []Prompt) ([]rlPrompt, string, error) {
	var r chat.Renderer
	out := make([]rlPrompt, len(ps))
	for i, p := range ps {
		if p.Messages == nil {
			out[i].tokens = tok.Encode(p.Text, true)
			continue
		}
		if r == nil {
			var err error
			if r, err = modelref.Renderer(ctx, base, name); err != nil {
				return nil, "", err
			}
		}
		rd, err := r.Render(p.Messages)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", p.Where, err)
		}
		out[i] = rlPrompt{tokens: rd.Tokens, stopTokens: rd.StopTokens, stopStrings: rd.StopStrings}
		if len(rd.StopTokens) > 0 {
			out[i].stopStrings = nil
		}
	}
	if r == nil {
		return out, "", nil
	}
	return out, r.Name(), nil
}

// promptHash fingerprints the prompts' tokens and stop conditions.
func promptHash(ps []rlPrompt) string {
	h := sha256.New()
	for _, p := range ps {
		fmt.Fprintf(h, "%v|%v|%q\n", p.tokens, p.stopTokens, p.stopStrings)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// rlLoop is RL's stepper. Each step samples the current policy, so every
// step is a barrier: RL is on-policy, as the cookbook's default loop is.
type rlLoop struct {
	*runner[RLMetrics]
	o       *RLOptions
	s       Sampler
	tok     *tokenizer.Tokenizer
	prompts []rlPrompt
	seed    uint64
	policy  string // the latest policy snapshot, deleted once superseded
}

func (l *rlLoop) barrier(int) bool { return true }

// group is one prompt's sampled completions and their rewards.
type group struct {
	prompt  int
	seqs    []tinkerapi.SampledSequence
	rewards []float64
}

// submit samples the step's groups from a snapshot of the current
// weights, scores them, and queues the policy-gradient step.
func (l *rlLoop) submit(ctx context.Context, step int) (func() (RLMetrics, error), error) {
	groups, err := l.sample(ctx, step)
	if err != nil {
		return nil, err
	}
	m := RLMetrics{Step: step + 1, LearningRate: l.o.LearningRate}
	if err := l.score(ctx, groups, &m); err != nil {
		return nil, err
	}
	data, trained := l.data(groups, &m)
	if len(data) == 0 {
		// Every group was dropped (or sampled nothing): the weights stay.
		return func() (RLMetrics, error) { m.Seconds = l.lap(); return m, nil }, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err() // interrupted while sampling or scoring
	}
	// The step's requests use the uncancelled context, as SFT's do.
	fb, err := l.tc.ForwardBackwardAsync(l.wait, tinkerapi.ForwardBackwardInput{Data: data, LossFn: l.o.Loss})
	if err != nil {
		return nil, err
	}
	opt, err := l.tc.OptimStepAsync(l.wait, adam(l.o.LearningRate))
	if err != nil {
		return nil, err
	}
	return func() (RLMetrics, error) {
		out, err := fb.Wait(l.wait)
		if err == nil {
			_, err = opt.Wait(l.wait)
		}
		if err != nil {
			return m, fmt.Errorf("step %d: %w", m.Step, err)
		}
		loss, _ := out.Loss()
		m.Loss = loss / float64(trained)
		m.Seconds = l.lap()
		return m, nil
	}, nil
}

// sample saves the policy for sampling and samples a group for each of
// the step's prompts, concurrently.
func (l *rlLoop) sample(ctx context.Context, step int) ([]group, error) {
	ttl := int64(samplerTTL)
	path, err := l.tc.SaveWeightsForSampler(l.wait, fmt.Sprintf("%s-policy-%06d", l.prefix, step), &ttl)
	if err != nil {
		return nil, fmt.Errorf("save the policy for sampling: %w", err)
	}
	l.keep.replaced(l.wait, l.policy)
	l.policy = path
	id, err := l.s.CreateSamplingSession(ctx, "", path)
	if err != nil {
		return nil, err
	}
	idx := batchOf(len(l.prompts), l.o.BatchSize, step, l.seed)
	groups := make([]group, len(idx))
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for g, j := range idx {
		groups[g].prompt = j
		wg.Go(func() {
			resp, err := l.s.Sample(ctx, id, l.request(step, j))
			if err != nil {
				errs[g] = fmt.Errorf("sample %s: %w", l.o.Prompts[j].Where, err)
				return
			}
			groups[g].seqs = resp.Sequences
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// request is prompt j's sampling request at step: its seed follows from
// the run's seed, the step and the prompt, so a resumed run samples what
// an uninterrupted one did.
func (l *rlLoop) request(step, j int) tinkerapi.SampleRequest {
	p := l.prompts[j]
	req := tinkerapi.NewSampleRequest(p.tokens)
	req.NumSamples, req.MaxTokens, req.Temperature = l.o.GroupSize, l.o.MaxTokens, l.o.Temperature
	req.StopTokens, req.StopStrings = p.stopTokens, p.stopStrings
	if l.o.Lora.Seed != nil {
		seed := *l.o.Lora.Seed*1_000_003 + int64(step)*10_007 + int64(j)
		req.Seed = &seed
	}
	return req
}

// score calls the reward function on each completion; a failure names the
// prompt and the completion.
func (l *rlLoop) score(ctx context.Context, groups []group, m *RLMetrics) error {
	n := 0
	for g := range groups {
		gr := &groups[g]
		p := l.o.Prompts[gr.prompt]
		for _, seq := range gr.seqs {
			text := l.completion(gr.prompt, seq)
			r, err := l.o.Reward(gr.prompt, text)
			if err == nil && (math.IsNaN(r) || math.IsInf(r, 0)) {
				err = fmt.Errorf("returned %v; a reward must be a finite number", r)
			}
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return userErr(fmt.Sprintf("reward of %s %s, completion %q: %v", p.Where, describe(p), clip(text, 60), err))
			}
			gr.rewards = append(gr.rewards, r)
			m.MeanReward += r
			m.Tokens += len(seq.Tokens)
			n++
		}
	}
	if n > 0 {
		m.MeanReward /= float64(n)
	}
	return nil
}

// completion is a sequence's text without the stop string that ended it.
func (l *rlLoop) completion(prompt int, seq tinkerapi.SampledSequence) string {
	return completionText(l.tok, seq.Tokens, l.prompts[prompt].stopStrings)
}

// describe quotes a prompt for an error: its text or its last message.
func describe(p Prompt) string {
	if p.Messages == nil {
		return fmt.Sprintf("(%q)", clip(p.Text, 60))
	}
	return fmt.Sprintf("(%q)", clip(p.Messages[len(p.Messages)-1].Content, 60))
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// data turns the groups into policy-gradient data: each completion's
// tokens are trained with its advantage (reward − the group mean) against
// the logprobs it was sampled with; the prompt's tokens weigh nothing.
// Groups whose rewards are all equal have advantage 0; DropEqualGroups
// leaves them out.
func (l *rlLoop) data(groups []group, m *RLMetrics) (out []tinkerapi.Datum, tokens int) {
	for _, gr := range groups {
		mean, equal := groupMean(gr.rewards)
		if equal && l.o.DropEqualGroups {
			m.Skipped++
			continue
		}
		for k, seq := range gr.seqs {
			if len(seq.Tokens) == 0 || len(seq.Logprobs) != len(seq.Tokens) {
				continue
			}
			out = append(out, rlDatum(l.prompts[gr.prompt].tokens, seq, gr.rewards[k]-mean))
			m.Trained++
			tokens += len(seq.Tokens)
		}
	}
	return out, tokens
}

// groupMean is the mean of a group's rewards and whether they are all
// equal (then the mean is that reward exactly, so advantages are 0).
func groupMean(rewards []float64) (mean float64, equal bool) {
	equal = true
	for _, r := range rewards {
		mean += r / float64(len(rewards))
		equal = equal && r == rewards[0]
	}
	if equal && len(rewards) > 0 {
		mean = rewards[0]
	}
	return mean, equal
}

// rlDatum is prompt+completion shifted into a datum whose targets past the
// prompt carry the sampling logprobs and the advantage.
func rlDatum(prompt []int, seq tinkerapi.SampledSequence, adv float64) tinkerapi.Datum {
	all := append(append([]int(nil), prompt...), seq.Tokens...)
	n := len(all) - 1
	targets := make([]int64, n)
	lp := make([]float32, n)
	advs := make([]float32, n)
	for i := range n {
		targets[i] = int64(all[i+1])
		if k := i + 1 - len(prompt); k >= 0 {
			lp[i], advs[i] = seq.Logprobs[k], float32(adv)
		}
	}
	return tinkerapi.Datum{ModelInput: all[:n], LossFnInputs: map[string]tinkerapi.Tensor{
		"target_tokens": tinkerapi.Int64s(targets), "logprobs": tinkerapi.Float32s(lp), "advantages": tinkerapi.Float32s(advs)}}
}
