package builtins

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	gotime "time"

	"go.starlark.net/starlark"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/train"
)

// TrainRun is what dpo() and rl() return share: the run's steps (a
// table, a chart of the headline figure, JSON) and its checkpoints.
// DPORun and RLRun give it its type name.
type TrainRun[M train.Record] struct {
	Kind           string // "dpo", "rl"
	What           string // table title: "DPO", "RL"
	R              *train.Result[M]
	Sampler, State *Checkpoint // nil when not saved
}

// DPORun is dpo()'s result.
type DPORun struct{ *TrainRun[train.DPOMetrics] }

// RLRun is rl()'s result.
type RLRun struct{ *TrainRun[train.RLMetrics] }

func (r DPORun) Type() string { return "dpo_run" }
func (r RLRun) Type() string  { return "rl_run" }

var (
	_ Tabular           = RLRun{}
	_ JSONValue         = DPORun{}
	_ ChartValue        = RLRun{}
	_ starlark.HasAttrs = DPORun{}
)

// newTrainRun looks up the run's checkpoints for display.
func newTrainRun[M train.Record](ctx context.Context, env *Env, kind, what string, res *train.Result[M]) (*TrainRun[M], error) {
	run := &TrainRun[M]{Kind: kind, What: what, R: res}
	c, err := env.Client()
	if err != nil {
		return nil, apiErr(err)
	}
	for _, p := range []struct {
		path string
		dst  **Checkpoint
	}{{res.StatePath, &run.State}, {res.SamplerPath, &run.Sampler}} {
		if p.path == "" {
			continue
		}
		if *p.dst, err = savedCheckpoint(ctx, c, p.path); err != nil {
			return nil, apiErr(err)
		}
	}
	return run, nil
}

func (r *TrainRun[M]) String() string {
	return fmt.Sprintf("<%s %s: %d/%d steps>", r.Kind, r.R.BaseModel, len(r.R.Steps), r.R.Total)
}
func (r *TrainRun[M]) Freeze()                            {}
func (r *TrainRun[M]) Truth() starlark.Bool               { return true }
func (r *TrainRun[M]) Hash() (uint32, error)              { return 0, fmt.Errorf("unhashable: %s_run", r.Kind) }
func (r DPORun) AttrNames() []string                      { return dpoRunAttrs.names(r.TrainRun) }
func (r DPORun) Attr(name string) (starlark.Value, error) { return dpoRunAttrs.get(r.TrainRun, name) }
func (r RLRun) AttrNames() []string                       { return rlRunAttrs.names(r.TrainRun) }
func (r RLRun) Attr(name string) (starlark.Value, error)  { return rlRunAttrs.get(r.TrainRun, name) }

var (
	dpoRunAttrs = attrTable[*TrainRun[train.DPOMetrics]]{
		{name: "log_dir", doc: "the directory of its config, metrics, reference log-likelihoods and state, or None", value: runLogDir[train.DPOMetrics]},
		{name: "metrics", doc: "one dict per step: step, epoch, loss, accuracy, margin, chosen_reward, rejected_reward, learning_rate, tokens, num_pairs, time", value: runMetrics[train.DPOMetrics]},
		{name: "sampler_checkpoint", doc: samplerCheckpointDoc, value: runSampler[train.DPOMetrics]},
		{name: "state_checkpoint", doc: stateCheckpointDoc, value: runState[train.DPOMetrics]},
	}
	rlRunAttrs = attrTable[*TrainRun[train.RLMetrics]]{
		{name: "log_dir", doc: "the directory of its config, metrics and state, or None", value: runLogDir[train.RLMetrics]},
		{name: "metrics", doc: "one dict per step: step, mean_reward, loss, tokens, num_trained, skipped_groups, learning_rate, time", value: runMetrics[train.RLMetrics]},
		{name: "sampler_checkpoint", doc: samplerCheckpointDoc, value: runSampler[train.RLMetrics]},
		{name: "state_checkpoint", doc: stateCheckpointDoc, value: runState[train.RLMetrics]},
	}
)

const (
	samplerCheckpointDoc = "the last sampler weights saved, or None"
	stateCheckpointDoc   = "the last training state saved, or None"
)

// The attributes every run of records M has: plain generic functions, so
// the tables above are literals the compiler lays out as data.

func runLogDir[M train.Record](r *TrainRun[M]) starlark.Value  { return noneIfEmpty(r.R.LogDir) }
func runSampler[M train.Record](r *TrainRun[M]) starlark.Value { return checkpointOrNone(r.Sampler) }
func runState[M train.Record](r *TrainRun[M]) starlark.Value   { return checkpointOrNone(r.State) }

func runMetrics[M train.Record](r *TrainRun[M]) starlark.Value {
	l := make([]starlark.Value, len(r.R.Steps))
	for i, m := range r.R.Steps {
		l[i] = recordDict(m)
	}
	return starlark.NewList(l)
}

// recordDict is a step's metrics as a dict, keyed as in metrics.jsonl.
func recordDict(m train.Record) *starlark.Dict {
	f := train.Fields(m)
	d := starlark.NewDict(len(f))
	for _, kv := range f {
		var v starlark.Value = starlark.None
		switch x := kv.Value.(type) {
		case int:
			v = starlark.MakeInt(x)
		case float64:
			v = starlark.Float(x)
		}
		d.SetKey(starlark.String(kv.Key), v)
	}
	return d
}

func (r *TrainRun[M]) Table(gotime.Time) *render.Table { return train.RunTable(r.What, r.R) }
func (r *TrainRun[M]) Chart(width int) string          { return train.Chart(r.R.Steps, width) }
func (r *TrainRun[M]) JSON() any                       { return train.RunJSON(r.R) }
func (r DPORun) MarshalJSON() ([]byte, error)          { return marshalJSON(r) }
func (r RLRun) MarshalJSON() ([]byte, error)           { return marshalJSON(r) }

// dataRowsArg reads data given as a JSONL path or a list: each list element
// becomes a row as JSON, named what[i] in errors.
func dataRowsArg(v starlark.Value, what string) ([]train.Row, error) {
	if path, ok := starlark.AsString(v); ok {
		return train.LoadRows(path)
	}
	l, ok := v.(*starlark.List)
	if !ok {
		return nil, fmt.Errorf("%s must be a JSONL path or a list, got %s", what, v.Type())
	}
	if l.Len() == 0 {
		return nil, fmt.Errorf("%s is empty", what)
	}
	out := make([]train.Row, l.Len())
	for i := range l.Len() {
		where := fmt.Sprintf("%s[%d]", what, i)
		j, err := ToJSON(l.Index(i))
		if err == nil {
			out[i].JSON, err = render.MarshalJSON(j)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		out[i].Where = where
	}
	return out, nil
}

// startArg reads a loop's first argument: a base model name or a
// tinker://…/weights/… path (a string), a checkpoint value, or the value
// of an earlier sft(), dpo() or rl() call, which starts from its last
// saved state.
func startArg(v starlark.Value) (string, error) {
	var state *Checkpoint
	switch x := v.(type) {
	case starlark.String:
		return string(x), nil
	case *Checkpoint:
		return x.C.TinkerPath, nil
	case *SFTRun:
		state = x.State
	case DPORun:
		state = x.State
	case RLRun:
		state = x.State
	default:
		return "", fmt.Errorf("base_model must be a model name, a tinker://…/weights/… path, a checkpoint or a run, got %s", v.Type())
	}
	if state == nil {
		return "", fmt.Errorf("that %s has no saved state to start from", v.Type())
	}
	return state.C.TinkerPath, nil
}

// learningRateArg is learning_rate=, or 0 (the loop's default, see
// train.SFTOptions.LearningRate) when it is None.
func learningRateArg(v starlark.Value) (float64, error) {
	if v == starlark.None {
		return 0, nil
	}
	lr, ok := starlark.AsFloat(v)
	if !ok {
		return 0, fmt.Errorf("learning_rate must be a number, got %s", v.Type())
	}
	if !(lr > 0) || math.IsInf(lr, 0) {
		return 0, fmt.Errorf("learning_rate must be positive")
	}
	return lr, nil
}

// callNumber calls a Starlark scorer or reward function and wants a
// number back.
func callNumber(thread *starlark.Thread, fn starlark.Callable, args ...starlark.Value) (float64, error) {
	v, err := starlark.Call(thread, fn, starlark.Tuple(args), nil)
	if err != nil {
		var ee *starlark.EvalError
		if errors.As(err, &ee) {
			return 0, errors.New(strings.TrimSpace(ee.Msg))
		}
		return 0, err
	}
	f, ok := starlark.AsFloat(v)
	if !ok {
		return 0, fmt.Errorf("%s returned %s, want a number", fn.Name(), v.Type())
	}
	return f, nil
}

// runLoop runs a training loop with the session, the live status line and
// an interrupt worded for the shell.
func runLoop(thread *starlark.Thread, name string, ro *train.RunOptions, loop func(ctx context.Context, env *Env) error) error {
	env := envOf(thread)
	ctx := ContextOf(thread)
	defer env.clearStatus()
	var status *train.Status
	if env.NoticesTTY {
		status = train.NewStatus(env.Notices, env.Width)
		ro.OnStep = status.Step
		defer status.Clear()
	}
	ro.OnResume = resumeNotice(env, name, ro.LogDir, status)
	err := loop(ctx, env)
	var ie *train.InterruptedError
	if errors.As(err, &ie) {
		if env.Notices != nil {
			fmt.Fprintf(env.Notices, "%s: %v\n", name, err)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, sessionErr(err))
	}
	return nil
}

// warningNotice writes a loop's warnings about its data to the notices
// stream, one line each, as "sft: warning: ...".
func warningNotice(env *Env, name string) func(string) {
	return func(msg string) {
		if env.Notices != nil {
			fmt.Fprintf(env.Notices, "%s: warning: %s\n", name, msg)
		}
	}
}

// resumeNotice says on the notices stream that a run resumes from the
// state in logDir, and measures the status line's ETA from there.
func resumeNotice(env *Env, name, logDir string, status *train.Status) func(step, total int) {
	return func(step, total int) {
		status.Resumed(step)
		if env.Notices != nil {
			fmt.Fprintf(env.Notices, "%s: resuming from step %d of %d (the state saved in %s)\n", name, step, total, logDir)
		}
	}
}
