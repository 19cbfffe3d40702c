package train

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// Evaluation defaults, shared by evaluate() and `tinker eval`.
const (
	DefaultEvalMaxTokens   = 64
	DefaultEvalConcurrency = 8
)

// EvalOptions is one evaluation: the model answers each conversation's
// prompt (the messages before its last assistant message, which is the
// reference answer) and a scorer compares the two.
type EvalOptions struct {
	Model     *modelref.Model // a base model or a sampler checkpoint
	Data      []Conversation
	Renderer  string
	MaxTokens int
	// Temperature 0 is greedy, the default: a score is then repeatable.
	Temperature float64
	NumSamples  int // completions per row
	Concurrency int // sampling requests in flight
	Seed        *int64
	// Scorer scores a completion of Data[row], called on the caller's
	// goroutine; nil is exact match after trimming white space.
	Scorer func(row int, completion string) (float64, error)
	NLL    bool // also score the references' NLL per token
}

// EvalRow is one scored completion.
type EvalRow struct {
	Where      string   `json:"row"`
	Prompt     string   `json:"prompt"` // the prompt's last message
	Completion string   `json:"completion"`
	Reference  string   `json:"reference"`
	Score      float64  `json:"score"`
	NLL        *float64 `json:"nll,omitempty"` // the reference's, per token
}

// EvalResult is an evaluation's rows and mean score.
type EvalResult struct {
	Model   string
	Rows    []EvalRow
	Score   float64  // mean over rows
	NLL     *float64 // per reference token over all rows, when asked
	Tokens  int      // completion tokens sampled
	Seconds float64
}

// evalItem is one conversation ready to sample.
type evalItem struct {
	prompt    chat.Rendered
	reference string
	full      chat.Training // prompt + reference, for the NLL
}

func (o *EvalOptions) check() error {
	switch {
	case o.MaxTokens < 1:
		return fmt.Errorf("max_tokens must be at least 1")
	case o.NumSamples < 1:
		return fmt.Errorf("num_samples must be at least 1")
	case o.Concurrency < 1:
		return fmt.Errorf("concurrency must be at least 1")
	case o.Temperature < 0 || math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0):
		return fmt.Errorf("temperature must be a number >= 0")
	case o.Model == nil:
		return fmt.Errorf("no model to evaluate")
	case len(o.Data) == 0:
		return fmt.Errorf("no rows to evaluate")
	}
	return nil
}

// evalItems splits each conversation at its last assistant message.
func evalItems(r chat.Renderer, data []Conversation) ([]evalItem, error) {
	out := make([]evalItem, len(data))
	for i, c := range data {
		last := len(c.Messages) - 1
		if c.Messages[last].Role != "assistant" || last == 0 {
			return nil, fmt.Errorf("%s: the last message must be the assistant's reference answer, after the prompt", c.Where)
		}
		p, err := r.Render(c.Messages[:last])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Where, err)
		}
		full, err := r.RenderForTraining(c.Messages, chat.TrainLastAssistant)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Where, err)
		}
		out[i] = evalItem{prompt: p, reference: c.Messages[last].Content, full: full}
	}
	return out, nil
}

// Evaluate samples the model on each row's prompt and scores the
// completions (see the evaluate() builtin's documentation).
func Evaluate(ctx context.Context, s Sampler, o EvalOptions) (*EvalResult, error) {
	if err := o.check(); err != nil {
		return nil, userErr(err.Error())
	}
	r, err := o.Model.Renderer(o.Renderer)
	if err != nil {
		return nil, userErr(err.Error())
	}
	tok, _ := o.Model.Tokenizer() // the renderer has one
	items, err := evalItems(r, o.Data)
	if err != nil {
		return nil, userErr(err.Error())
	}
	id, err := s.CreateSamplingSession(ctx, o.Model.SessionBase(), o.Model.Path)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	resps, err := sampleAll(ctx, s, id, &o, items)
	if err != nil {
		return nil, err
	}
	res := &EvalResult{Model: o.Model.Name}
	if err := res.score(ctx, &o, tok, items, resps); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// evalResp is a row's sampling answers: its completions and, with NLL,
// the prompt logprobs of the reference.
type evalResp struct {
	seqs []tinkerapi.SampledSequence
	nll  []*float32
}

// sampleAll samples every row, Concurrency requests at a time.
func sampleAll(ctx context.Context, s Sampler, id string, o *EvalOptions, items []evalItem) ([]evalResp, error) {
	out := make([]evalResp, len(items))
	errs := make([]error, len(items))
	sem := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = sampleRow(ctx, s, id, o, it, i)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", o.Data[i].Where, errs[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func sampleRow(ctx context.Context, s Sampler, id string, o *EvalOptions, it evalItem, i int) (evalResp, error) {
	req := tinkerapi.NewSampleRequest(it.prompt.Tokens)
	req.NumSamples, req.MaxTokens, req.Temperature = o.NumSamples, o.MaxTokens, o.Temperature
	if len(it.prompt.StopTokens) > 0 {
		req.StopTokens = it.prompt.StopTokens
	} else {
		req.StopStrings = it.prompt.StopStrings
	}
	if o.Seed != nil {
		seed := *o.Seed + int64(i)
		req.Seed = &seed
	}
	resp, err := s.Sample(ctx, id, req)
	if err != nil {
		return evalResp{}, err
	}
	out := evalResp{seqs: resp.Sequences}
	if !o.NLL {
		return out, nil
	}
	nreq := tinkerapi.NewSampleRequest(it.full.Tokens)
	nreq.MaxTokens, nreq.PromptLogprobs = 1, true
	if resp, err = s.Sample(ctx, id, nreq); err != nil {
		return evalResp{}, err
	}
	out.nll = resp.PromptLogprobs
	return out, nil
}

// score turns the answers into rows, calling the scorer on each
// completion in order.
func (res *EvalResult) score(ctx context.Context, o *EvalOptions, tok *tokenizer.Tokenizer, items []evalItem, resps []evalResp) error {
	sumNLL, weight := 0.0, 0.0
	for i, it := range items {
		prompt := o.Data[i].Messages[len(o.Data[i].Messages)-2].Content
		var nll *float64
		if o.NLL {
			s, w := referenceNLL(it.full.Weights, resps[i].nll)
			sumNLL, weight = sumNLL+s, weight+w
			v := s / math.Max(w, 1)
			nll = &v
		}
		for _, seq := range resps[i].seqs {
			text := completionText(tok, seq.Tokens, it.prompt.StopStrings)
			score, err := scoreOf(o.Scorer, i, text, it.reference)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return userErr(fmt.Sprintf("scorer on %s, completion %q: %v", o.Data[i].Where, clip(text, 60), err))
			}
			res.Rows = append(res.Rows, EvalRow{Where: o.Data[i].Where, Prompt: prompt, Completion: text, Reference: it.reference, Score: score, NLL: nll})
			res.Score += score
			res.Tokens += len(seq.Tokens)
		}
	}
	res.Score /= float64(len(res.Rows))
	if o.NLL {
		v := sumNLL / math.Max(weight, 1)
		res.NLL = &v
	}
	return nil
}

// scoreOf is the scorer's score, or exact match after trimming.
func scoreOf(scorer func(int, string) (float64, error), row int, text, reference string) (float64, error) {
	if scorer == nil {
		if strings.TrimSpace(text) == strings.TrimSpace(reference) {
			return 1, nil
		}
		return 0, nil
	}
	v, err := scorer(row, text)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = fmt.Errorf("returned %v; a score must be a finite number", v)
	}
	return v, err
}

// referenceNLL is the negative log-likelihood of the weighted (reference)
// tokens and their count; lp[i] is token i's logprob given those before.
func referenceNLL(weights []float32, lp []*float32) (sum, count float64) {
	for i, w := range weights {
		if w > 0 && i < len(lp) && lp[i] != nil {
			sum -= float64(w) * float64(*lp[i])
			count += float64(w)
		}
	}
	return sum, count
}

// completionText decodes a completion without the stop string that ended
// it.
func completionText(tok *tokenizer.Tokenizer, tokens []int, stops []string) string {
	text := tok.Decode(tokens, true)
	for _, s := range stops {
		if t, ok := strings.CutSuffix(text, s); ok {
			return t
		}
	}
	return text
}
