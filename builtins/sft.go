package builtins

import (
	"context"
	"errors"
	"fmt"
	gotime "time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
	"go.starlark.net/starlark"
)

// sftBuiltins are the builtins sft.go defines (registryParts lists them).
var sftBuiltins = []entry{
	{docEntry{
		Name: "sft",
		Signature: "sft(base_model, data, rank=32, seed=None, renderer=None, train_on=\"all_assistant_messages\", reduction=\"mean\", " +
			"max_length=None, truncate=False, batch_size=8, epochs=1, learning_rate=None, lr_schedule=\"linear\", save_every=20, " +
			"keep_states=2, eval_data=None, eval_every=10, log_dir=None, name=None, max_steps=None)",
		Summary: "Supervised fine-tuning on conversations; returns the run, which displays its steps.",
		Details: "base_model may instead be a training state to start from, as the cookbook's load_checkpoint_path: a\n" +
			"tinker://…/weights/… path, a checkpoint, or the value of an earlier sft(), dpo() or rl() (its last saved\n" +
			"state); the run loads its weights with a fresh optimizer, and the state's base model sets the learning\n" +
			"rate, renderer and tokenizer. data and eval_data are a JSONL file of {\"messages\": [...]} lines or a list of such dicts (or of\n" +
			"message lists). Each conversation is rendered as conversation_datum() does (reduction=\"mean\": each\n" +
			"example's weights sum to 1, as the cookbook's SFT; \"none\": 0/1); one that is longer than\n" +
			"max_length is an error unless truncate=True (then cut; what was cut is said once, as is the cookbook's\n" +
			"all_assistant_messages warning, on stderr and in .warnings). Each step trains on batch_size conversations with Adam\n" +
			"(its forward_backward and optim_step submitted together); every epoch visits each conversation once\n" +
			"in an order fixed by seed, which also fixes the adapter's initialisation. learning_rate defaults to\n" +
			"lr_for(base_model), the published LoRA rule; lr_schedule is \"linear\" (decays to 0), \"constant\"\n" +
			"or \"cosine\". eval_data is scored every eval_every steps and at the end as the mean NLL per trained\n" +
			"token, as is the loss, whatever the reduction. The state is saved every save_every steps and at the\n" +
			"end, with sampler weights; of the states saved, the newest keep_states stay and older ones are deleted\n" +
			"(the final state and sampler weights always stay; keep_states=0 keeps all). log_dir holds config.json, metrics.jsonl (one line per step) and state.json (the\n" +
			"latest saved state); running again with the same log_dir and settings continues from that state\n" +
			"and ends with the same weights as an uninterrupted run. max_steps stops this call early. Ctrl-C\n" +
			"stops after the current step and saves its state; a second Ctrl-C returns at once (the state saved\n" +
			"before stays). The result has .metrics (per-step dicts: step,\n" +
			"epoch, loss, eval_nll, learning_rate, tokens, time), .warnings, .sampler_checkpoint and .state_checkpoint.",
		Example: "tuned = sft(\"tinker-local/tiny-llama\", \"chats.jsonl\", rank=8, seed=1, epochs=30, lr_schedule=\"constant\", log_dir=\"runs/chats\")\n" +
			"sample(tuned.sampler_checkpoint, messages=[{\"role\": \"user\", \"content\": \"Sky?\"}], temperature=0, max_tokens=8)",
		Learns: `evaluate(tuned, "chats.jsonl", max_tokens=8).score == 1.0`,
	}, sftFn},
}

// conversationsArg reads a JSONL path or a list of conversations, each
// in a shape train.Conversations accepts.
func conversationsArg(v starlark.Value, what string) ([]train.Conversation, error) {
	if path, ok := starlark.AsString(v); ok {
		return train.LoadConversations(path)
	}
	rows, err := dataRowsArg(v, what)
	if err != nil {
		return nil, err
	}
	return train.Conversations(rows)
}

func optIntArg(v starlark.Value, name string, def int) (int, error) {
	p, err := optInt64Arg(v, name)
	if err != nil || p == nil {
		return def, err
	}
	return int(*p), nil
}

func sftFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var baseV, dataV starlark.Value
	var seedV, rendererV, maxLenV, evalV, logDirV, nameV, maxStepsV starlark.Value = starlark.None, starlark.None, starlark.None,
		starlark.None, starlark.None, starlark.None, starlark.None
	var lrV starlark.Value = starlark.None
	o := train.SFTOptions{Lora: tinkerapi.DefaultLoraConfig(), TrainOn: chat.TrainAllAssistant, BatchSize: train.DefaultBatchSize, Epochs: 1,
		Schedule: "linear", EvalEvery: train.DefaultEvalEvery}
	o.SaveEvery, o.KeepStates = train.DefaultSaveEvery, train.DefaultKeepStates
	if err := unpackArgs(b.Name(), args, kwargs, "base_model", &baseV, "data", &dataV, "rank?", &o.Lora.Rank,
		"seed?", &seedV, "renderer?", &rendererV, "train_on?", &o.TrainOn, "reduction?", &o.Reduction, "max_length?", &maxLenV, "truncate?", &o.Truncate,
		"batch_size?", &o.BatchSize, "epochs?", &o.Epochs, "learning_rate?", &lrV, "lr_schedule?", &o.Schedule,
		"save_every?", &o.SaveEvery, "keep_states?", &o.KeepStates, "eval_data?", &evalV, "eval_every?", &o.EvalEvery, "log_dir?", &logDirV, "name?", &nameV,
		"max_steps?", &maxStepsV); err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", b.Name(), err) }
	var err error
	if o.BaseModel, err = startArg(baseV); err != nil {
		return nil, fail(err)
	}
	if o.Data, err = conversationsArg(dataV, "data"); err != nil {
		return nil, fail(err)
	}
	if evalV != starlark.None {
		if o.Eval, err = conversationsArg(evalV, "eval_data"); err != nil {
			return nil, fail(err)
		}
	}
	if o.Lora.Seed, err = optInt64Arg(seedV, "seed"); err != nil {
		return nil, fail(err)
	}
	if o.LearningRate, err = learningRateArg(lrV); err != nil {
		return nil, fail(err)
	}
	if o.MaxLength, err = optIntArg(maxLenV, "max_length", 0); err != nil {
		return nil, fail(err)
	}
	if o.MaxSteps, err = optIntArg(maxStepsV, "max_steps", 0); err != nil {
		return nil, fail(err)
	}
	for _, s := range []struct {
		v   starlark.Value
		dst *string
		n   string
	}{{rendererV, &o.Renderer, "renderer"}, {logDirV, &o.LogDir, "log_dir"}, {nameV, &o.Name, "name"}} {
		if *s.dst, err = optString(s.v, s.n); err != nil {
			return nil, fail(err)
		}
	}
	env := envOf(thread)
	ctx := ContextOf(thread)
	s, err := env.Session(ctx)
	if err != nil {
		return nil, apiErr(err)
	}
	defer env.clearStatus()
	var status *train.Status
	if env.NoticesTTY {
		status = train.NewStatus(env.Notices, env.Width)
		o.OnStep = status.Step
		defer env.HushStatus()()
	}
	o.OnResume = resumeNotice(env, b.Name(), o.LogDir, status)
	o.OnWarning = warningNotice(env, b.Name())
	res, err := train.SFT(ctx, s, o)
	status.Clear() // before any message, which would follow it on its line
	if err != nil {
		var ie *train.InterruptedError
		if errors.As(err, &ie) {
			// The shell reports an interrupt in its own words; the way to
			// resume goes to the notices stream.
			if env.Notices != nil {
				fmt.Fprintf(env.Notices, "sft: %v\n", err)
			}
			return nil, err
		}
		return nil, fail(sessionErr(err))
	}
	return NewSFTRun(ctx, env, res)
}

// SFTRun is sft()'s result.
type SFTRun struct {
	R              *train.SFTResult
	Sampler, State *Checkpoint // nil when the run has not finished / saved
}

var (
	_ Tabular           = (*SFTRun)(nil)
	_ JSONValue         = (*SFTRun)(nil)
	_ ChartValue        = (*SFTRun)(nil)
	_ starlark.HasAttrs = (*SFTRun)(nil)
)

// NewSFTRun looks up the run's checkpoints for display.
func NewSFTRun(ctx context.Context, env *Env, res *train.SFTResult) (*SFTRun, error) {
	run := &SFTRun{R: res}
	c, err := env.Client()
	if err != nil {
		return nil, apiErr(err)
	}
	if res.StatePath != "" {
		if run.State, err = savedCheckpoint(ctx, c, res.StatePath); err != nil {
			return nil, apiErr(err)
		}
	}
	if res.SamplerPath != "" {
		if run.Sampler, err = savedCheckpoint(ctx, c, res.SamplerPath); err != nil {
			return nil, apiErr(err)
		}
	}
	return run, nil
}

func (r *SFTRun) String() string {
	return fmt.Sprintf("<sft %s: %d/%d steps>", r.R.BaseModel, len(r.R.Steps), r.R.Total)
}
func (r *SFTRun) Type() string          { return "sft_run" }
func (r *SFTRun) Freeze()               {}
func (r *SFTRun) Truth() starlark.Bool  { return true }
func (r *SFTRun) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: sft_run") }

func (r *SFTRun) AttrNames() []string                      { return sftRunAttrs.names(r) }
func (r *SFTRun) Attr(name string) (starlark.Value, error) { return sftRunAttrs.get(r, name) }

var sftRunAttrs = attrTable[*SFTRun]{
	{name: "log_dir", doc: "the directory of its config, metrics and state, or None", value: func(r *SFTRun) starlark.Value { return noneIfEmpty(r.R.LogDir) }},
	{name: "warnings", doc: "what the run warned about its data (the renderer's warning, conversations max_length cut), as strings", value: func(r *SFTRun) starlark.Value { return strList(r.R.Warnings) }},
	{name: "metrics", doc: "one dict per step: step, epoch, loss, eval_nll, learning_rate, tokens, num_sequences, time", value: func(r *SFTRun) starlark.Value {
		l := make([]starlark.Value, len(r.R.Steps))
		for i, m := range r.R.Steps {
			l[i] = stepDict(m)
		}
		return starlark.NewList(l)
	}},
	{name: "sampler_checkpoint", doc: "the last sampler weights saved, or None", value: func(r *SFTRun) starlark.Value { return checkpointOrNone(r.Sampler) }},
	{name: "state_checkpoint", doc: "the last training state saved, or None", value: func(r *SFTRun) starlark.Value { return checkpointOrNone(r.State) }},
}

func checkpointOrNone(c *Checkpoint) starlark.Value {
	if c == nil {
		return starlark.None
	}
	return c
}

// stepDict is one step's metrics as a dict.
func stepDict(m train.SFTMetrics) *starlark.Dict {
	var evalNLL starlark.Value = starlark.None
	if m.EvalNLL != nil {
		evalNLL = starlark.Float(*m.EvalNLL)
	}
	d := starlark.NewDict(8)
	for _, kv := range []struct {
		k string
		v starlark.Value
	}{{"step", starlark.MakeInt(m.Step)}, {"epoch", starlark.MakeInt(m.Epoch)}, {"loss", starlark.Float(m.Loss)},
		{"eval_nll", evalNLL}, {"learning_rate", starlark.Float(m.LearningRate)}, {"tokens", starlark.MakeInt(m.Tokens)},
		{"num_sequences", starlark.MakeInt(m.Sequences)}, {"time", starlark.Float(m.Seconds)}} {
		_ = d.SetKey(starlark.String(kv.k), kv.v)
	}
	return d
}

// Table shows one row per step.
func (r *SFTRun) Table(gotime.Time) *render.Table {
	return train.SFTTable(r.R)
}

// Chart draws the loss curve.
func (r *SFTRun) Chart(width int) string { return train.Chart(r.R.Steps, width) }

func (r *SFTRun) JSON() any { return train.SFTJSON(r.R) }

func (r *SFTRun) MarshalJSON() ([]byte, error) { return marshalJSON(r) }
