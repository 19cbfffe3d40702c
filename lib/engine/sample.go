package engine

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
)

// Stop reasons, as on the wire.
const (
	StopReasonStop   = "stop"   // a stop token, sequence, string or StopFunc matched
	StopReasonLength = "length" // MaxTokens tokens were generated
)

// SampleRequest asks for NumSamples continuations of Prompt.
//
// Unlike the wire format, zero values are literal: Temperature 0 means
// greedy, so callers must pass the wire default of 1 explicitly.
type SampleRequest struct {
	Prompt      []int
	NumSamples  int     // 0 is treated as 1
	MaxTokens   int     // tokens to generate at most; 0 generates none
	Temperature float64 // 0 = greedy (argmax, lowest id on ties)
	TopK        int     // keep the k most likely tokens; <= 0 (wire: -1) = off
	TopP        float64 // nucleus: keep the smallest set with mass >= TopP; 0 or >= 1 = off
	// Seed makes sampling reproducible: sample i draws from a stream derived
	// from (Seed, i), so num_samples > 1 gives different samples and each
	// is the same whether it runs alone, batched or under load. nil draws a
	// random seed.
	Seed *int64

	StopTokens    []int    // stop when one of these is generated (it is kept in Tokens)
	StopSequences [][]int  // stop when the generated tokens end with one of these
	StopStrings   []string // stop when the decoded generated text contains one of these
	// Decode detokenizes generated tokens for StopStrings; nil uses the
	// model's own tokenizer (tiny models).
	Decode func(tokens []int) string
	// StopFunc, if set, is asked after every token whether to stop. It and
	// Decode run on the goroutine that steps every request of the model,
	// so they must be quick and must not wait for a Sample call of it.
	StopFunc func(generated []int) bool

	// ModelLogprobs reports Sequence.Logprobs under the model's own
	// distribution, log softmax(logits), whatever the temperature.
	ModelLogprobs bool

	PromptLogprobs     bool // fill SampleResponse.PromptLogprobs
	TopKPromptLogprobs int  // > 0 fills SampleResponse.TopKPromptLogprobs with k entries per position
}

// Sequence is one sampled continuation.
//
// Logprobs[i] is the log-probability of Tokens[i] under the distribution it
// was sampled from before truncation, as the service reports it:
// log softmax(logits / Temperature) over the FULL vocabulary (top-k/top-p
// do not renormalize it). With Temperature 0 (greedy), Temperature 1 or
// SampleRequest.ModelLogprobs it is the model's own log softmax(logits).
type Sequence struct {
	Tokens     []int
	Logprobs   []float32
	StopReason string
}

// TokenLogprob is one (token, log-probability) pair.
type TokenLogprob struct {
	Token   int
	Logprob float32
}

// SampleResponse holds the sequences and, when asked, prompt log-probs.
type SampleResponse struct {
	Sequences []Sequence
	// PromptLogprobs[i] is log p(Prompt[i] | Prompt[:i]) at temperature 1;
	// the first entry is nil (no context). nil unless requested.
	PromptLogprobs []*float32
	// TopKPromptLogprobs[i] lists the k most likely tokens at position i
	// (given Prompt[:i]), most likely first; the first entry is nil.
	TopKPromptLogprobs [][]TokenLogprob
}

// prefillChunk bounds how many positions of one prompt go through one
// forward call, which bounds the activation memory for long prompts and how
// long one step of the batch makes the other requests' tokens wait
// (prefillBatch bounds a step's prompts together).
const prefillChunk = 128

// Sample generates NumSamples continuations of req.Prompt. Concurrent
// calls on a model and on its adapters share one batch (see batcher):
// every step runs one forward pass over the next token of all their
// samples, and each result has the same bits as the call made alone. It
// returns ctx's error as soon as ctx is done, and the call's work leaves
// the batch before the next step.
func (m *Model) Sample(ctx context.Context, req SampleRequest) (*SampleResponse, error) {
	if err := m.checkRequest(&req); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sampling cancelled: %w", err)
	}
	j := newJob(ctx, m, req)
	m.batch.submit(j)
	return j.wait()
}

// seqRun is one sample in flight.
type seqRun struct {
	cache       *kvCache
	rng         *rng
	sm          *sampler
	out         *Sequence
	next        int     // token chosen for the next position
	nextLogprob float64 // its log-probability
}

// groups is how many forward passes a step splits its rows into, one per
// core. Small models are split by sequence; large ones keep one batch so
// each weight row is read once per step for all sequences, and parallelise
// inside each matrix product instead.
func (m *Model) groups() int {
	if m.cfg.Params() > 50_000_000 {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

func (m *Model) checkRequest(req *SampleRequest) error {
	if len(req.Prompt) == 0 {
		return fmt.Errorf("prompt is empty: give at least one token")
	}
	for _, t := range req.Prompt {
		if t < 0 || t >= m.cfg.VocabSize {
			return fmt.Errorf("prompt token %d is outside the vocabulary (0..%d)", t, m.cfg.VocabSize-1)
		}
	}
	if req.NumSamples == 0 {
		req.NumSamples = 1
	}
	switch {
	case req.NumSamples < 0:
		return fmt.Errorf("num_samples must be positive, got %d", req.NumSamples)
	case req.MaxTokens < 0:
		return fmt.Errorf("max_tokens must not be negative, got %d", req.MaxTokens)
	case req.Temperature < 0 || math.IsNaN(req.Temperature) || math.IsInf(req.Temperature, 0):
		return fmt.Errorf("temperature must be a finite number >= 0, got %v", req.Temperature)
	case req.TopP < 0 || math.IsNaN(req.TopP):
		return fmt.Errorf("top_p must be in (0, 1], got %v", req.TopP)
	case req.TopKPromptLogprobs < 0:
		return fmt.Errorf("topk_prompt_logprobs must not be negative")
	}
	if mp := m.cfg.MaxPositionEmbeddings; mp > 0 && len(req.Prompt)+req.MaxTokens > mp {
		return fmt.Errorf("prompt (%d tokens) + max_tokens (%d) exceeds the model's context of %d tokens", len(req.Prompt), req.MaxTokens, mp)
	}
	if len(req.StopStrings) > 0 && req.Decode == nil {
		if m.tok == nil {
			return fmt.Errorf("stop strings need a Decode function for this model")
		}
		req.Decode = func(ids []int) string { return m.tok.Decode(ids, true) }
	}
	return nil
}

// stopReason reports why generation ends after the latest token, or "".
func (m *Model) stopReason(req *SampleRequest, gen []int) string {
	tok := gen[len(gen)-1]
	if slices.Contains(req.StopTokens, tok) {
		return StopReasonStop
	}
	for _, s := range req.StopSequences {
		if len(s) > 0 && len(gen) >= len(s) && slices.Equal(gen[len(gen)-len(s):], s) {
			return StopReasonStop
		}
	}
	if len(req.StopStrings) > 0 {
		text := req.Decode(gen)
		for _, s := range req.StopStrings {
			if s != "" && strings.Contains(text, s) {
				return StopReasonStop
			}
		}
	}
	if req.StopFunc != nil && req.StopFunc(gen) {
		return StopReasonStop
	}
	if len(gen) >= req.MaxTokens {
		return StopReasonLength
	}
	return ""
}

func (m *Model) promptLogprobs(resp *SampleResponse, logits []float32, pos int, req SampleRequest) {
	lse := logSumExp(logits, 1)
	if resp.PromptLogprobs != nil {
		lp := float32(float64(logits[req.Prompt[pos]]) - lse)
		resp.PromptLogprobs[pos] = &lp
	}
	if k := req.TopKPromptLogprobs; k > 0 {
		top := topK(logits, k, nil)
		out := make([]TokenLogprob, len(top))
		for i, t := range top {
			out[i] = TokenLogprob{Token: t, Logprob: float32(float64(logits[t]) - lse)}
		}
		resp.TopKPromptLogprobs[pos] = out
	}
}

// sampleSeed derives sample i's stream from the request seed.
func sampleSeed(base uint64, i int) uint64 {
	x := base
	h := splitmix64(&x)
	y := h ^ uint64(i)*0xd1b54a32d192ed03
	return splitmix64(&y)
}

func randomSeed() uint64 {
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails on supported platforms
	return binary.LittleEndian.Uint64(b[:])
}
