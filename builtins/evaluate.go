package builtins

import (
	"context"
	"fmt"
	gotime "time"

	"go.starlark.net/starlark"

	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
)

// evaluateBuiltins are the builtins evaluate.go defines (registryParts lists them).
var evaluateBuiltins = []entry{
	{docEntry{
		Name: "evaluate",
		Signature: "evaluate(model, data, scorer=None, max_tokens=64, temperature=0.0, num_samples=1, renderer=None, " +
			"concurrency=8, seed=None, nll=False)",
		Summary: "Score a model's answers on conversations whose last assistant message is the reference.",
		Details: "model is a base model, a tinker:// sampler path, a checkpoint or a training run (its sampler\n" +
			"checkpoint). data is a JSONL file or a list of rows in any shape sft() trains on ({\"messages\": [...]},\n" +
			"{\"prompt\": ..., \"completion\": ...} or a list of messages):\n" +
			"the model answers the messages before the last one (rendered with the chat renderer), and\n" +
			"scorer(row, completion) -> number scores each answer (default: 1 if it equals the reference after\n" +
			"stripping white space, else 0). temperature=0 is greedy, so a score is repeatable; num_samples\n" +
			"answers each row that many times. concurrency bounds the sampling requests in flight. nll=True also\n" +
			"gives the references' negative log-likelihood per token, from the sampler's prompt logprobs. The\n" +
			"result displays as a table and has .score (the mean), .nll and .rows (dicts: row, prompt,\n" +
			"completion, reference, score).",
		Example: "qa = [{\"messages\": [{\"role\": \"user\", \"content\": \"Capital of France?\"}, {\"role\": \"assistant\", \"content\": \"Paris.\"}]}]\n" +
			"evaluate(\"tinker-local/tiny-llama\", qa, max_tokens=8).score",
	}, evaluateFn},
}

func evaluateFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var modelV, dataV starlark.Value
	var scorerV, rendererV, seedV starlark.Value = starlark.None, starlark.None, starlark.None
	var tempV starlark.Value = starlark.Float(0)
	o := train.EvalOptions{MaxTokens: train.DefaultEvalMaxTokens, NumSamples: 1, Concurrency: train.DefaultEvalConcurrency}
	if err := unpackArgs(b.Name(), args, kwargs, "model", &modelV, "data", &dataV, "scorer?", &scorerV, "max_tokens?", &o.MaxTokens,
		"temperature?", &tempV, "num_samples?", &o.NumSamples, "renderer?", &rendererV, "concurrency?", &o.Concurrency,
		"seed?", &seedV, "nll?", &o.NLL); err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", b.Name(), err) }
	rows, err := dataRowsArg(dataV, "data")
	if err == nil {
		o.Data, err = train.Conversations(rows)
	}
	if err != nil {
		return nil, fail(err)
	}
	t, ok := starlark.AsFloat(tempV)
	if !ok {
		return nil, fail(fmt.Errorf("temperature must be a number, got %s", tempV.Type()))
	}
	o.Temperature = t
	if o.Renderer, err = optString(rendererV, "renderer"); err != nil {
		return nil, fail(err)
	}
	if o.Seed, err = optInt64Arg(seedV, "seed"); err != nil {
		return nil, fail(err)
	}
	if scorerV != starlark.None {
		fn, ok := scorerV.(starlark.Callable)
		if !ok {
			return nil, fail(fmt.Errorf("scorer must be a function (row, completion) -> number, got %s", scorerV.Type()))
		}
		given, err := promptValues(thread, dataV, rows)
		if err != nil {
			return nil, fail(err)
		}
		o.Scorer = func(i int, completion string) (float64, error) {
			return callNumber(thread, fn, given[i], starlark.String(completion))
		}
	}
	env := envOf(thread)
	ctx := ContextOf(thread)
	defer env.clearStatus()
	s, err := env.Session(ctx)
	if err != nil {
		return nil, apiErr(err)
	}
	if o.Model, err = samplerModel(ctx, s, modelV); err != nil {
		return nil, fail(err)
	}
	res, err := train.Evaluate(ctx, s, o)
	if err != nil {
		return nil, fail(sessionErr(err))
	}
	return &Evaluation{R: res}, nil
}

// samplerModel resolves what evaluate() samples: a base model, a
// tinker:// sampler path, a checkpoint or a finished run's sampler weights.
func samplerModel(ctx context.Context, s *tinkerapi.Session, v starlark.Value) (*modelref.Model, error) {
	name, err := samplerName(v)
	if err != nil {
		return nil, err
	}
	return ResolveSamplerModel(ctx, s, name)
}

// samplerName is the model name or tinker:// path that sample() and
// evaluate() sample for v; a run stands for its sampler checkpoint.
func samplerName(v starlark.Value) (string, error) {
	var name string
	switch m := v.(type) {
	case starlark.String:
		return string(m), nil
	case *Checkpoint:
		return m.C.TinkerPath, nil
	case *SFTRun:
		name = samplerPath(m.Sampler)
	case DPORun:
		name = samplerPath(m.Sampler)
	case RLRun:
		name = samplerPath(m.Sampler)
	default:
		return "", fmt.Errorf("model must be a base model name, a tinker:// path, a checkpoint or a run, got %s", v.Type())
	}
	if name == "" {
		return "", fmt.Errorf("the run has no sampler checkpoint yet: finish it first")
	}
	return name, nil
}

func samplerPath(c *Checkpoint) string {
	if c == nil {
		return ""
	}
	return c.C.TinkerPath
}

// ResolveSamplerModel resolves a base model name (which the backend must
// serve) or a tinker:// sampler checkpoint, with errors worded for a user.
func ResolveSamplerModel(ctx context.Context, s *tinkerapi.Session, name string) (*modelref.Model, error) {
	m, err := modelref.Resolve(ctx, s, name)
	if err != nil {
		return nil, apiErr(err)
	}
	if m.Path == "" {
		if err := ops.CheckBaseModel(ctx, s.Client(), name); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Evaluation is evaluate()'s result.
type Evaluation struct{ R *train.EvalResult }

var (
	_ Tabular           = (*Evaluation)(nil)
	_ JSONValue         = (*Evaluation)(nil)
	_ starlark.HasAttrs = (*Evaluation)(nil)
)

func (e *Evaluation) String() string {
	return fmt.Sprintf("<evaluation of %s: score %.3f over %d completions>", e.R.Model, e.R.Score, len(e.R.Rows))
}
func (e *Evaluation) Type() string                             { return "evaluation" }
func (e *Evaluation) Freeze()                                  {}
func (e *Evaluation) Truth() starlark.Bool                     { return true }
func (e *Evaluation) Hash() (uint32, error)                    { return 0, fmt.Errorf("unhashable: evaluation") }
func (e *Evaluation) AttrNames() []string                      { return evaluationAttrs.names(e) }
func (e *Evaluation) Attr(name string) (starlark.Value, error) { return evaluationAttrs.get(e, name) }

var evaluationAttrs = attrTable[*Evaluation]{
	{name: "model", doc: "the model evaluated, as named", value: func(e *Evaluation) starlark.Value { return starlark.String(e.R.Model) }},
	{name: "nll", doc: "the references' negative log-likelihood per token (nll=True), or None", value: func(e *Evaluation) starlark.Value {
		if e.R.NLL == nil {
			return starlark.None
		}
		return starlark.Float(*e.R.NLL)
	}},
	{name: "rows", doc: "one dict per answer: row, prompt, completion, reference, score", value: func(e *Evaluation) starlark.Value {
		l := make([]starlark.Value, len(e.R.Rows))
		for i, r := range e.R.Rows {
			d := starlark.NewDict(5)
			for _, kv := range []struct {
				k string
				v starlark.Value
			}{{"row", starlark.String(r.Where)}, {"prompt", starlark.String(r.Prompt)}, {"completion", starlark.String(r.Completion)},
				{"reference", starlark.String(r.Reference)}, {"score", starlark.Float(r.Score)}} {
				_ = d.SetKey(starlark.String(kv.k), kv.v)
			}
			l[i] = d
		}
		return starlark.NewList(l)
	}},
	{name: "score", doc: "the mean score", value: func(e *Evaluation) starlark.Value { return starlark.Float(e.R.Score) }},
}

func (e *Evaluation) Table(gotime.Time) *render.Table { return train.EvalTable(e.R) }
func (e *Evaluation) JSON() any                       { return train.EvalJSON(e.R) }
func (e *Evaluation) MarshalJSON() ([]byte, error)    { return marshalJSON(e) }
