package builtins

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// SFT defaults, shared with `tinker train sft`.
const (
	DefaultBatchSize    = 8
	DefaultLearningRate = 1e-4
	DefaultSaveEvery    = 20
	DefaultEvalEvery    = 10
)

func init() {
	register(docEntry{
		Name: "sft",
		Signature: "sft(base_model, data, rank=32, seed=None, renderer=None, train_on=\"all_assistant_messages\", max_length=None, " +
			"truncate=False, batch_size=8, epochs=1, learning_rate=1e-4, lr_schedule=\"linear\", save_every=20, eval_data=None, " +
			"eval_every=10, log_dir=None, name=None, max_steps=None)",
		Summary: "Supervised fine-tuning on conversations; returns the run, which displays its steps.",
		Details: "data and eval_data are a JSONL file of {\"messages\": [...]} lines or a list of such dicts (or of\n" +
			"message lists). Each conversation is rendered as conversation_datum() does; one that is longer than\n" +
			"max_length is an error unless truncate=True. Each step trains on batch_size conversations with Adam\n" +
			"(its forward_backward and optim_step submitted together); every epoch visits each conversation once\n" +
			"in an order fixed by seed, which also fixes the adapter's initialisation. lr_schedule is \"linear\"\n" +
			"(decays to 0), \"constant\" or \"cosine\". eval_data is scored every eval_every steps and at the end\n" +
			"as the mean NLL per trained token. The state is saved every save_every steps and at the end, with\n" +
			"sampler weights. log_dir holds config.json, metrics.jsonl (one line per step) and state.json (the\n" +
			"latest saved state); running again with the same log_dir and settings continues from that state\n" +
			"and ends with the same weights as an uninterrupted run. max_steps stops this call early. Ctrl-C\n" +
			"stops after the current step and saves its state. The result has .metrics (per-step dicts: step,\n" +
			"epoch, loss, eval_nll, learning_rate, tokens, time), .sampler_checkpoint and .state_checkpoint.",
		Example: "tuned = sft(\"tinker-local/tiny-llama\", \"chats.jsonl\", rank=8, seed=1, epochs=20, learning_rate=3e-3, log_dir=\"runs/chats\")\n" +
			"sample(tuned.sampler_checkpoint, messages=[{\"role\": \"user\", \"content\": \"Sky?\"}], temperature=0)",
	}, sftFn)
}

// conversationsArg reads a JSONL path or a list of conversations.
func conversationsArg(v starlark.Value, what string) ([]Conversation, error) {
	if path, ok := starlark.AsString(v); ok {
		return LoadConversations(path)
	}
	l, ok := v.(*starlark.List)
	if !ok {
		return nil, fmt.Errorf("%s must be a JSONL path or a list of conversations, got %s", what, v.Type())
	}
	out := make([]Conversation, l.Len())
	for i := range l.Len() {
		x := l.Index(i)
		if d, ok := x.(*starlark.Dict); ok {
			m, found, _ := d.Get(starlark.String("messages"))
			if !found {
				return nil, fmt.Errorf("%s[%d] has no \"messages\"", what, i)
			}
			x = m
		}
		msgs, err := messagesArg(x)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", what, i, err)
		}
		out[i] = Conversation{Messages: msgs, Where: fmt.Sprintf("%s[%d]", what, i)}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no conversations", what)
	}
	return out, nil
}

func optIntArg(v starlark.Value, name string, def int) (int, error) {
	p, err := optInt64Arg(v, name)
	if err != nil || p == nil {
		return def, err
	}
	return int(*p), nil
}

func sftFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var dataV starlark.Value
	var seedV, rendererV, maxLenV, evalV, logDirV, nameV, maxStepsV starlark.Value = starlark.None, starlark.None, starlark.None,
		starlark.None, starlark.None, starlark.None, starlark.None
	var lrV starlark.Value = starlark.Float(DefaultLearningRate)
	o := SFTOptions{Lora: tinkerapi.DefaultLoraConfig(), TrainOn: chat.TrainAllAssistant, BatchSize: DefaultBatchSize, Epochs: 1,
		Schedule: "linear", SaveEvery: DefaultSaveEvery, EvalEvery: DefaultEvalEvery}
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "base_model", &o.BaseModel, "data", &dataV, "rank?", &o.Lora.Rank,
		"seed?", &seedV, "renderer?", &rendererV, "train_on?", &o.TrainOn, "max_length?", &maxLenV, "truncate?", &o.Truncate,
		"batch_size?", &o.BatchSize, "epochs?", &o.Epochs, "learning_rate?", &lrV, "lr_schedule?", &o.Schedule,
		"save_every?", &o.SaveEvery, "eval_data?", &evalV, "eval_every?", &o.EvalEvery, "log_dir?", &logDirV, "name?", &nameV,
		"max_steps?", &maxStepsV); err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", b.Name(), err) }
	var err error
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
	lr, ok := starlark.AsFloat(lrV)
	if !ok {
		return nil, fail(fmt.Errorf("learning_rate must be a number"))
	}
	o.LearningRate = lr
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
	var status *progress.Status
	if env.NoticesTTY {
		began := gotime.Now()
		o.OnStep = func(m StepMetrics, total int) {
			line := StepLine(m, total, gotime.Since(began))
			if status == nil {
				status = progress.NewStatus(env.Notices, true, env.Width, line)
			} else {
				status.Set(line)
			}
		}
		defer func() {
			if status != nil {
				status.Clear()
			}
		}()
	}
	res, err := SFT(ctx, s, o)
	if err != nil {
		var ie *InterruptedError
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

// StepLine is the live progress line of a run: step, loss, tokens/s, ETA.
func StepLine(m StepMetrics, total int, elapsed gotime.Duration) string {
	rate := float64(m.Tokens) / math.Max(m.Seconds, 1e-9)
	eta := gotime.Duration(float64(elapsed) / float64(m.Step) * float64(total-m.Step))
	return fmt.Sprintf("step %d/%d  loss %.4f  %.0f tok/s  ETA %s", m.Step, total, m.Loss, rate, progress.FormatETA(eta))
}

// SFTRun is sft()'s result.
type SFTRun struct {
	R                *SFTResult
	Sampler, State   *Checkpoint // nil when the run has not finished / saved
	samplerP, stateP string
}

var (
	_ Tabular           = (*SFTRun)(nil)
	_ JSONValue         = (*SFTRun)(nil)
	_ ChartValue        = (*SFTRun)(nil)
	_ starlark.HasAttrs = (*SFTRun)(nil)
)

// NewSFTRun looks up the run's checkpoints for display.
func NewSFTRun(ctx context.Context, env *Env, res *SFTResult) (*SFTRun, error) {
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
func (r *SFTRun) AttrNames() []string {
	return []string{"log_dir", "metrics", "sampler_checkpoint", "state_checkpoint"}
}

func (r *SFTRun) Attr(name string) (starlark.Value, error) {
	switch name {
	case "sampler_checkpoint":
		if r.Sampler == nil {
			return starlark.None, nil
		}
		return r.Sampler, nil
	case "state_checkpoint":
		if r.State == nil {
			return starlark.None, nil
		}
		return r.State, nil
	case "log_dir":
		if r.R.LogDir == "" {
			return starlark.None, nil
		}
		return starlark.String(r.R.LogDir), nil
	case "metrics":
		l := make([]starlark.Value, len(r.R.Steps))
		for i, m := range r.R.Steps {
			d := starlark.NewDict(8)
			d.SetKey(starlark.String("step"), starlark.MakeInt(m.Step))
			d.SetKey(starlark.String("epoch"), starlark.MakeInt(m.Epoch))
			d.SetKey(starlark.String("loss"), starlark.Float(m.Loss))
			if m.EvalNLL != nil {
				d.SetKey(starlark.String("eval_nll"), starlark.Float(*m.EvalNLL))
			} else {
				d.SetKey(starlark.String("eval_nll"), starlark.None)
			}
			d.SetKey(starlark.String("learning_rate"), starlark.Float(m.LearningRate))
			d.SetKey(starlark.String("tokens"), starlark.MakeInt(m.Tokens))
			d.SetKey(starlark.String("num_sequences"), starlark.MakeInt(m.Sequences))
			d.SetKey(starlark.String("time"), starlark.Float(m.Seconds))
			l[i] = d
		}
		return starlark.NewList(l), nil
	}
	return nil, nil
}

// Table shows one row per step.
func (r *SFTRun) Table(gotime.Time) *render.Table {
	return SFTTable(r.R)
}

// SFTTable is the table of a run's steps, titled with where it ended.
func SFTTable(res *SFTResult) *render.Table {
	title := fmt.Sprintf("SFT of %s: %d of %d steps", res.BaseModel, lastStep(res), res.Total)
	t := &render.Table{Title: title, Columns: []render.Column{{Header: "Step", Right: true}, {Header: "Epoch", Right: true},
		{Header: "Loss", Right: true}, {Header: "Eval NLL", Right: true}, {Header: "LR", Right: true},
		{Header: "Tokens", Right: true}, {Header: "Time", Right: true}}}
	for _, m := range res.Steps {
		eval := ""
		if m.EvalNLL != nil {
			eval = fmt.Sprintf("%.4f", *m.EvalNLL)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(m.Step), fmt.Sprint(m.Epoch), fmt.Sprintf("%.4f", m.Loss), eval,
			fmt.Sprintf("%.3g", m.LearningRate), fmt.Sprint(m.Tokens), fmt.Sprintf("%.2fs", m.Seconds)})
	}
	return t
}

func lastStep(res *SFTResult) int {
	if len(res.Steps) == 0 {
		return 0
	}
	return res.Steps[len(res.Steps)-1].Step
}

// Chart draws the loss curve.
func (r *SFTRun) Chart(width int) string {
	loss := make([]float64, len(r.R.Steps))
	for i, m := range r.R.Steps {
		loss[i] = m.Loss
	}
	return LossChart(loss, width, 8)
}

// LossChart draws values as columns of block characters, height rows
// tall, at most width columns wide (steps are averaged into columns).
func LossChart(vals []float64, width, height int) string {
	if len(vals) == 0 {
		return ""
	}
	const label = 10
	cols := min(len(vals), max(width-label, 1))
	pts := make([]float64, cols)
	for c := range cols {
		lo, hi := c*len(vals)/cols, (c+1)*len(vals)/cols
		s := 0.0
		for _, v := range vals[lo:hi] {
			s += v
		}
		pts[c] = s / float64(hi-lo)
	}
	top, bottom := pts[0], pts[0]
	for _, v := range pts {
		top, bottom = math.Max(top, v), math.Min(bottom, v)
	}
	span := top - bottom
	if span == 0 {
		span = 1
	}
	blocks := []rune(" ▁▂▃▄▅▆▇█")
	var b strings.Builder
	for row := height - 1; row >= 0; row-- {
		switch row {
		case height - 1:
			fmt.Fprintf(&b, "%9.4g ", top)
		case 0:
			fmt.Fprintf(&b, "%9.4g ", bottom)
		default:
			b.WriteString(strings.Repeat(" ", label))
		}
		for _, v := range pts {
			eighths := int(math.Round((v-bottom)/span*float64(height*8-1))) + 1
			n := min(max(eighths-row*8, 0), 8)
			b.WriteRune(blocks[n])
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%s loss by step (1–%d)", strings.Repeat(" ", label-1), len(vals))
	return b.String()
}

func (r *SFTRun) JSON() any { return SFTJSON(r.R) }

// SFTJSON is a run as JSON: its steps and checkpoints.
func SFTJSON(res *SFTResult) any {
	steps := make([]any, len(res.Steps))
	for i, m := range res.Steps {
		o := render.Object{{Key: "step", Value: m.Step}, {Key: "epoch", Value: m.Epoch}, {Key: "loss", Value: m.Loss}}
		if m.EvalNLL != nil {
			o = append(o, render.Member{Key: "eval_nll", Value: *m.EvalNLL})
		}
		o = append(o, render.Member{Key: "learning_rate", Value: m.LearningRate}, render.Member{Key: "tokens", Value: m.Tokens},
			render.Member{Key: "num_sequences", Value: m.Sequences}, render.Member{Key: "time", Value: m.Seconds})
		steps[i] = o
	}
	opt := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	return render.Object{{Key: "base_model", Value: res.BaseModel}, {Key: "total_steps", Value: res.Total}, {Key: "steps", Value: steps},
		{Key: "state_checkpoint", Value: opt(res.StatePath)}, {Key: "sampler_checkpoint", Value: opt(res.SamplerPath)}}
}

func (r *SFTRun) MarshalJSON() ([]byte, error) { return marshalJSON(r) }
