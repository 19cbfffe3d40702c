package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// SFT defaults, shared by the sft() builtin and `tinker train sft` (and
// DPO's batch size and every loop's save interval). The learning rate
// defaults to the published rule, models.LoRALearningRate.
const (
	DefaultBatchSize = 8
	DefaultSaveEvery = 20
	DefaultEvalEvery = 10
)

// SFTOptions is one supervised fine-tuning run.
type SFTOptions struct {
	RunOptions
	// BaseModel is a base model, or a tinker://…/weights/… state to start
	// from (its base model then counts).
	BaseModel    string
	Data         []Conversation
	Eval         []Conversation
	Lora         tinkerapi.LoraConfig
	Renderer     string
	TrainOn      string
	MaxLength    int    // 0: no limit
	Truncate     bool   // cut longer examples instead of failing
	Reduction    string // ReductionMean (the cookbook's default) or ReductionNone
	BatchSize    int
	Epochs       int
	LearningRate float64 // 0: lr_for(BaseModel), the published rule
	Schedule     string  // linear, constant or cosine
	EvalEvery    int     // steps between evaluations; 0: only at the end
}

// SFTMetrics is one step of SFT, one line of metrics.jsonl.
type SFTMetrics struct {
	Step         int      `json:"step"`
	Epoch        int      `json:"epoch"`
	Loss         float64  `json:"loss"` // mean NLL per trained token, whatever the reduction
	EvalNLL      *float64 `json:"eval_nll,omitempty"`
	LearningRate float64  `json:"learning_rate"`
	Tokens       int      `json:"tokens"`
	Sequences    int      `json:"num_sequences"`
	Seconds      float64  `json:"time"`
}

func (m SFTMetrics) StepNumber() int                     { return m.Step }
func (m SFTMetrics) Headline() (string, float64)         { return "loss", m.Loss }
func (m SFTMetrics) Throughput() (tokens int, s float64) { return m.Tokens, m.Seconds }

// SFTResult is the outcome of an SFT run.
type SFTResult = Result[SFTMetrics]

func (o *SFTOptions) check() error {
	switch o.Schedule {
	case "linear", "constant", "cosine":
	default:
		return fmt.Errorf("lr_schedule must be \"linear\", \"constant\" or \"cosine\", got %q", o.Schedule)
	}
	switch {
	case o.BatchSize < 1:
		return fmt.Errorf("batch_size must be at least 1")
	case o.Epochs < 1:
		return fmt.Errorf("epochs must be at least 1")
	case o.LearningRate != 0 && !positive(o.LearningRate): // 0: the default
		return fmt.Errorf("learning_rate must be positive")
	case o.SaveEvery < 0 || o.EvalEvery < 0 || o.MaxLength < 0 || o.MaxSteps < 0 || o.KeepStates < 0:
		return fmt.Errorf("save_every, eval_every, max_length, max_steps and keep_states must not be negative")
	case o.Lora.Rank < 1:
		return fmt.Errorf("rank must be positive")
	}
	var err error
	if o.Reduction, err = CheckReduction(o.Reduction); err != nil {
		return err
	}
	if !isTrainOn(o.TrainOn) {
		return fmt.Errorf("train_on must be one of %s, got %q", strings.Join(chat.TrainOnRules(), ", "), o.TrainOn)
	}
	return nil
}

func isTrainOn(s string) bool { return slices.Contains(chat.TrainOnRules(), s) }

// positive reports whether x is a finite number above zero (false for NaN).
func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// learningRate is the schedule's rate at step (0-based) of total.
func learningRate(schedule string, base float64, step, total int) float64 {
	frac := float64(step) / float64(total)
	switch schedule {
	case "linear":
		return base * (1 - frac)
	case "cosine":
		return base * 0.5 * (1 + math.Cos(math.Pi*frac))
	}
	return base
}

// batchOf returns the data indices of step: each epoch visits every
// example once in an order fixed by the seed and the epoch.
func batchOf(n, batchSize, step int, seed uint64) []int {
	perEpoch := (n + batchSize - 1) / batchSize
	epoch, i := step/perEpoch, step%perEpoch
	order := rand.New(rand.NewPCG(seed, uint64(epoch))).Perm(n)
	return order[i*batchSize : min((i+1)*batchSize, n)]
}

// toData renders conversations as training examples with reduction. It
// also returns what the run should be told once: the renderer's warning
// (the cookbook's, for all_assistant_messages on a renderer that rewrites
// history) and how many conversations max_length cut. A conversation cut
// down to no trained token is left out and counted, never sent: it would
// train nothing.
func toData(r chat.Renderer, convs []Conversation, o *SFTOptions, reduction string) ([]tinkerapi.Datum, []string, error) {
	out := make([]tinkerapi.Datum, 0, len(convs))
	do := DatumOptions{TrainOn: o.TrainOn, MaxLength: o.MaxLength, Truncate: o.Truncate, Reduction: reduction}
	var warning string
	cut, emptied := 0, 0
	for _, c := range convs {
		d, note, err := conversationDatum(r, c.Messages, do)
		if note.cut {
			cut++
		}
		if warning == "" {
			warning = note.warning
		}
		switch {
		case err != nil && note.cut && errors.Is(err, errNothingTrained):
			emptied++
			continue
		case err != nil && strings.Contains(err.Error(), "longer than max_length"):
			return nil, nil, fmt.Errorf("%s: %w (truncate=True cuts it)", c.Where, err)
		case err != nil:
			return nil, nil, fmt.Errorf("%s: %w", c.Where, err)
		}
		out = append(out, d)
	}
	if len(convs) > 0 && len(out) == 0 {
		return nil, nil, fmt.Errorf("every conversation was cut at max_length %d before its first trained token: raise max_length", o.MaxLength)
	}
	return out, notes(warning, len(convs), cut, emptied, o.MaxLength), nil
}

// notes words toData's findings as one-line warnings.
func notes(warning string, n, cut, emptied, maxLength int) []string {
	var out []string
	if warning != "" {
		out = append(out, warning)
	}
	if cut > 0 {
		s := fmt.Sprintf("max_length %d cut %d of %d conversations", maxLength, cut, n)
		if emptied > 0 {
			s += fmt.Sprintf("; %d of them kept no trained token and are left out", emptied)
		}
		out = append(out, s)
	}
	return out
}

// sftConfig is log_dir/config.json of SFT: what must match to resume.
type sftConfig struct {
	BaseModel    string  `json:"base_model"`
	From         string  `json:"from,omitempty"`
	DataSHA256   string  `json:"data_sha256"`
	EvalSHA256   string  `json:"eval_sha256,omitempty"`
	Rank         int     `json:"rank"`
	Seed         *int64  `json:"seed"`
	TrainMLP     bool    `json:"train_mlp"`
	TrainAttn    bool    `json:"train_attn"`
	TrainUnembed bool    `json:"train_unembed"`
	Renderer     string  `json:"renderer"`
	TrainOn      string  `json:"train_on"`
	Reduction    string  `json:"reduction"`
	MaxLength    int     `json:"max_length"`
	BatchSize    int     `json:"batch_size"`
	Epochs       int     `json:"epochs"`
	LearningRate float64 `json:"learning_rate"`
	Schedule     string  `json:"lr_schedule"`
	SaveEvery    int     `json:"save_every"`
	EvalEvery    int     `json:"eval_every"`
	Name         string  `json:"name"`
}

func (o *SFTOptions) config(st start, renderer string, data, eval []tinkerapi.Datum) sftConfig {
	return sftConfig{BaseModel: o.BaseModel, From: st.from, DataSHA256: dataHash(data), EvalSHA256: dataHash(eval), Rank: o.Lora.Rank, Seed: o.Lora.Seed,
		TrainMLP: o.Lora.TrainMLP, TrainAttn: o.Lora.TrainAttn, TrainUnembed: o.Lora.TrainUnembed, Renderer: renderer, TrainOn: o.TrainOn, Reduction: o.Reduction,
		MaxLength: o.MaxLength, BatchSize: o.BatchSize, Epochs: o.Epochs, LearningRate: o.LearningRate, Schedule: o.Schedule,
		SaveEvery: o.SaveEvery, EvalEvery: o.EvalEvery, Name: o.Name}
}

func userErr(msg string) error { return &tinkerapi.UserError{Msg: msg} }

// SFT runs supervised fine-tuning (see the sft() builtin's documentation).
// Every input is checked before anything is written to LogDir or sent.
func SFT(ctx context.Context, s Session, o SFTOptions) (*SFTResult, error) {
	if err := o.check(); err != nil {
		return nil, userErr(err.Error())
	}
	st, err := begin(ctx, s, &o.RunOptions, &o.BaseModel, &o.LearningRate, &o.Lora, models.LoRALearningRate)
	if err != nil {
		return nil, err
	}
	r, err := modelref.Renderer(ctx, o.BaseModel, o.Renderer)
	if err != nil {
		return nil, userErr(err.Error())
	}
	data, warnings, err := toData(r, o.Data, &o, o.Reduction)
	if err != nil {
		return nil, userErr(err.Error())
	}
	// Eval data keeps 0/1 weights whatever the reduction: its NLL is the
	// mean per trained token, comparable between runs.
	eval, evalWarnings, err := toData(r, o.Eval, &o, ReductionNone)
	if err != nil {
		return nil, userErr("eval_data: " + err.Error())
	}
	for _, w := range evalWarnings {
		if !slices.Contains(warnings, w) {
			warnings = append(warnings, "eval_data: "+w)
		}
	}
	perEpoch := (len(data) + o.BatchSize - 1) / o.BatchSize
	run, err := newRunner[SFTMetrics](ctx, &o.RunOptions, st, perEpoch*o.Epochs, o.config(st, r.Name(), data, eval), "sft")
	if err != nil {
		return nil, logDirErr(err)
	}
	run.warn(warnings)
	if run.done() {
		return run.res, nil
	}
	if err := run.open(ctx, s, o.Lora, "tinker sft"); err != nil {
		return nil, run.stopped(ctx, err)
	}
	defer run.close()
	l := &sftLoop{runner: run, o: &o, data: data, eval: eval, perEpoch: perEpoch}
	if o.Lora.Seed != nil {
		l.seed = uint64(*o.Lora.Seed)
	}
	return run.drive(ctx, l)
}

// sftLoop is SFT's stepper: a batch of conversations per step, trained
// with cross_entropy and Adam, evaluated every EvalEvery steps.
type sftLoop struct {
	*runner[SFTMetrics]
	o          *SFTOptions
	data, eval []tinkerapi.Datum
	perEpoch   int
	seed       uint64
}

// evalAt reports whether eval data is scored after step n (1-based).
func (l *sftLoop) evalAt(n int) bool {
	return len(l.eval) > 0 && (n == l.total || l.o.EvalEvery > 0 && n%l.o.EvalEvery == 0)
}

func (l *sftLoop) barrier(step int) bool { return l.evalAt(step + 1) }

// submit sends step's forward_backward and optim_step back to back.
func (l *sftLoop) submit(ctx context.Context, step int) (func() (SFTMetrics, error), error) {
	lr := learningRate(l.o.Schedule, l.o.LearningRate, step, l.total)
	var batch []tinkerapi.Datum
	tokens := 0
	for _, j := range batchOf(len(l.data), l.o.BatchSize, step, l.seed) {
		batch = append(batch, l.data[j])
		tokens += len(l.data[j].ModelInput)
	}
	// Both requests go out with the uncancelled context: an interrupt
	// between them would leave a seq_id the server waits for (30 s) before
	// it runs the save that follows. drive checks for it before submitting.
	fb, err := l.tc.ForwardBackwardAsync(l.wait, tinkerapi.ForwardBackwardInput{Data: batch, LossFn: "cross_entropy"})
	if err != nil {
		return nil, err
	}
	// If this fails, the step's gradients stay unapplied and the run
	// stops at the step before, whose weights are unchanged.
	opt, err := l.tc.OptimStepAsync(l.wait, adam(lr))
	if err != nil {
		return nil, err
	}
	m := SFTMetrics{Step: step + 1, Epoch: step/l.perEpoch + 1, LearningRate: lr, Tokens: tokens, Sequences: len(batch)}
	return func() (SFTMetrics, error) {
		out, err := fb.Wait(l.wait)
		if err == nil {
			_, err = opt.Wait(l.wait)
		}
		if err != nil {
			return m, fmt.Errorf("step %d: %w", m.Step, err)
		}
		m.Loss = TokenNLL(batch, out.Logprobs())
		return l.evaluate(m)
	}, nil
}

// evaluate adds the eval NLL where due and the step's time.
func (l *sftLoop) evaluate(m SFTMetrics) (SFTMetrics, error) {
	if l.evalAt(m.Step) {
		nll, err := EvalNLL(l.wait, l.tc, l.eval, l.o.BatchSize)
		if err != nil {
			return m, fmt.Errorf("evaluate after step %d: %w", m.Step, err)
		}
		m.EvalNLL = &nll
	}
	m.Seconds = l.lap()
	return m, nil
}

// EvalNLL is the mean negative log-likelihood per trained token of data
// under the current weights; all forward passes are submitted before any
// is awaited.
func EvalNLL(ctx context.Context, tc Client, data []tinkerapi.Datum, batchSize int) (float64, error) {
	var futs []*tinkerapi.Future[*tinkerapi.ForwardBackwardOutput]
	for i := 0; i < len(data); i += batchSize {
		f, err := tc.ForwardAsync(ctx, tinkerapi.ForwardBackwardInput{Data: data[i:min(i+batchSize, len(data))], LossFn: "cross_entropy"})
		if err != nil {
			return 0, err
		}
		futs = append(futs, f)
	}
	sum := 0.0
	for _, f := range futs {
		out, err := f.Wait(ctx)
		if err != nil {
			return 0, err
		}
		l, _ := out.Loss()
		sum += l
	}
	return sum / TotalWeight(data), nil
}
