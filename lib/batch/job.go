// Package batch samples many prompts from many models into a JSONL file
// that a later run with the same job resumes: every (model, prompt, sample)
// row is appended and fsync'd as it completes, rows already in the file are
// skipped, and each row's seed is derived from the job's seed and the row's
// identity, so an interrupted and resumed run writes the same rows as an
// uninterrupted one. It prints nothing; callers draw progress from the
// OnProgress callback and render the Result's per-model summary. The file
// format and the resume rules are in docs/batch.md.
package batch

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tinkershell/tinker/lib/chat"
)

// DefaultConcurrency is the number of rows in flight when Job.Concurrency is 0.
const DefaultConcurrency = 8

// Prompt is one prompt of a job: exactly one of Text, Tokens and Messages.
type Prompt struct {
	// ID names the prompt in the output rows; it must be unique in the job
	// (ReadPrompts uses the "id" field or the line number).
	ID       string
	Text     *string        // encoded with the model's tokenizer (adding BOS)
	Tokens   []int          // sent as they are
	Messages []chat.Message // rendered with the model's chat renderer
}

// Params are the sampling parameters shared by every row.
type Params struct {
	MaxTokens   int
	Temperature float64 // 0 is greedy
	TopP        float64 // 1: no nucleus limit
	TopK        int     // -1: no limit
	// At most one of StopStrings and StopTokens. When both are empty,
	// prompts given as messages stop at their renderer's end of turn.
	StopStrings []string
	StopTokens  []int
	// Seed is the job's base seed; nil picks a random one on the first run
	// and records it next to the output, so resumed runs reuse it.
	Seed *int64
	// Renderer renders Messages prompts; "" is the model's default.
	Renderer string
}

// DefaultParams are the SDK's sampling defaults: 64 tokens at temperature 1
// with no top-k or top-p limit.
func DefaultParams() Params {
	return Params{MaxTokens: 64, Temperature: 1, TopP: 1, TopK: -1}
}

// Job is one batch: every model × prompt × sample index is a row.
type Job struct {
	// Models are base model names or tinker://…/sampler_weights/… paths.
	Models     []string
	Prompts    []Prompt
	NumSamples int // per prompt and model; 0 means 1
	Params     Params
	// Output is the JSONL file rows are appended to; its parameters are
	// kept in Output+".meta.json".
	Output string
	// Concurrency bounds the rows in flight (DefaultConcurrency when 0).
	Concurrency int
}

func (j *Job) validate() error {
	switch {
	case len(j.Models) == 0:
		return errors.New("no models: give at least one base model or tinker:// sampler path")
	case len(j.Prompts) == 0:
		return errors.New("no prompts")
	case j.Output == "":
		return errors.New("no output file")
	case j.NumSamples < 0:
		return fmt.Errorf("num_samples must be at least 1, got %d", j.NumSamples)
	case j.Concurrency < 0:
		return fmt.Errorf("concurrency must be at least 1, got %d", j.Concurrency)
	}
	p := j.Params
	switch {
	case p.MaxTokens < 1:
		return fmt.Errorf("max_tokens must be at least 1, got %d", p.MaxTokens)
	case p.Temperature < 0 || math.IsNaN(p.Temperature):
		return fmt.Errorf("temperature must not be negative, got %v", p.Temperature)
	case !(p.TopP > 0 && p.TopP <= 1):
		return fmt.Errorf("top_p must be in (0, 1], got %v", p.TopP)
	case p.TopK == 0 || p.TopK < -1:
		return fmt.Errorf("top_k must be -1 (no limit) or positive, got %d", p.TopK)
	case len(p.StopStrings) > 0 && len(p.StopTokens) > 0:
		return errors.New("give stop strings or stop token ids, not both")
	}
	seenModel := map[string]bool{}
	for _, m := range j.Models {
		if strings.TrimSpace(m) == "" {
			return errors.New("a model name is empty")
		}
		if seenModel[m] {
			return fmt.Errorf("model %s is listed twice", m)
		}
		seenModel[m] = true
	}
	seen := map[string]bool{}
	for i, pr := range j.Prompts {
		if err := pr.check(); err != nil {
			return fmt.Errorf("prompt %d (id %q): %w", i+1, pr.ID, err)
		}
		if seen[pr.ID] {
			return fmt.Errorf("prompt id %q is used twice", pr.ID)
		}
		seen[pr.ID] = true
	}
	return nil
}

func (p Prompt) check() error {
	n := 0
	if p.Text != nil {
		n++
	}
	if p.Tokens != nil {
		n++
	}
	if p.Messages != nil {
		n++
	}
	switch {
	case p.ID == "":
		return errors.New("the id is empty")
	case n != 1:
		return errors.New("give exactly one of text, tokens and messages")
	case p.Text != nil && *p.Text == "":
		return errors.New("the text is empty")
	case p.Tokens != nil && len(p.Tokens) == 0:
		return errors.New("the token list is empty")
	case p.Messages != nil && len(p.Messages) == 0:
		return errors.New("the message list is empty")
	}
	for i, m := range p.Messages {
		if m.Role == "" {
			return fmt.Errorf("message %d has no role", i+1)
		}
	}
	return nil
}

// key is a row's identity.
type key struct {
	Model, PromptID string
	Sample          int
}

// RowSeed is the seed of one row: a hash of the job's seed and the row's
// identity, kept below 2^53 so every JSON reader holds it exactly.
func RowSeed(seed int64, model, promptID string, sample int) int64 {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	// Lengths first, so ("a", "bc") and ("ab", "c") differ.
	fmt.Fprintf(h, "%d:%s%d:%s%d", len(model), model, len(promptID), promptID, sample)
	return int64(binary.LittleEndian.Uint64(h.Sum(nil)) & (1<<53 - 1))
}
