package builtins

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Conversation is one training conversation; Where names its source for
// error messages ("data.jsonl:3" or "conversation 3").
type Conversation struct {
	Messages []chat.Message
	Where    string
}

// LoadConversations reads a JSONL file of {"messages": [...]} objects, one
// per line (blank lines are skipped); errors name the line.
func LoadConversations(path string) ([]Conversation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Conversation
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", path, line)
		var rec struct {
			Messages []chat.Message `json:"messages"`
		}
		if err := json.Unmarshal(text, &rec); err != nil {
			return nil, fmt.Errorf("%s: not a JSON object with \"messages\": %v", where, err)
		}
		if len(rec.Messages) == 0 {
			return nil, fmt.Errorf("%s: no messages", where)
		}
		for i, m := range rec.Messages {
			if m.Role == "" {
				return nil, fmt.Errorf("%s: message %d has no role", where, i)
			}
		}
		out = append(out, Conversation{Messages: rec.Messages, Where: where})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no conversations", path)
	}
	return out, nil
}

// SFTOptions is one supervised fine-tuning run.
type SFTOptions struct {
	BaseModel    string
	Data         []Conversation
	Eval         []Conversation
	Lora         tinkerapi.LoraConfig
	Renderer     string
	TrainOn      string
	MaxLength    int  // 0: no limit
	Truncate     bool // cut longer examples instead of failing
	BatchSize    int
	Epochs       int
	LearningRate float64
	Schedule     string // linear, constant or cosine
	SaveEvery    int    // steps between saved states; 0: only at the end
	EvalEvery    int    // steps between evaluations; 0: only at the end
	LogDir       string
	Name         string // checkpoint name prefix
	// MaxSteps > 0 stops this call after that many steps of the run
	// (saving its state); the schedule still spans the whole run.
	MaxSteps int
	// OnStep is told of each finished step.
	OnStep func(s StepMetrics, total int)
}

// StepMetrics is one line of metrics.jsonl.
type StepMetrics struct {
	Step         int      `json:"step"`
	Epoch        int      `json:"epoch"`
	Loss         float64  `json:"loss"` // mean NLL per trained token
	EvalNLL      *float64 `json:"eval_nll,omitempty"`
	LearningRate float64  `json:"learning_rate"`
	Tokens       int      `json:"tokens"`
	Sequences    int      `json:"num_sequences"`
	Seconds      float64  `json:"time"`
}

// SFTResult is the outcome of a run (or of the part of it this call ran).
type SFTResult struct {
	BaseModel   string
	Steps       []StepMetrics
	Total       int
	StatePath   string
	SamplerPath string // empty until the run has finished
	LogDir      string
}

// sftState is log_dir/state.json: the latest saved state.
type sftState struct {
	Step        int    `json:"step"`
	StatePath   string `json:"state_path"`
	SamplerPath string `json:"sampler_path,omitempty"`
}

// InterruptedError is SFT's error when ctx was cancelled: the state of
// the last finished step has been saved by then.
type InterruptedError struct {
	Step, Total int
	StatePath   string
	LogDir      string
	// Resume words how to continue, given the log directory, e.g. as the
	// builtin's argument (the default) or a command-line option.
	Resume func(logDir string) string
}

func (e *InterruptedError) Error() string {
	how := "training_client(state=...) continues from it; give log_dir to make runs resumable"
	if e.LogDir != "" {
		if e.Resume != nil {
			how = e.Resume(e.LogDir)
		} else {
			how = fmt.Sprintf("run again with log_dir=%q to resume", e.LogDir)
		}
	}
	return fmt.Sprintf("interrupted after step %d of %d; state saved to %s; %s", e.Step, e.Total, e.StatePath, how)
}

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
	case !(o.LearningRate > 0) || math.IsInf(o.LearningRate, 0):
		return fmt.Errorf("learning_rate must be positive")
	case o.SaveEvery < 0 || o.EvalEvery < 0 || o.MaxLength < 0 || o.MaxSteps < 0:
		return fmt.Errorf("save_every, eval_every, max_length and max_steps must not be negative")
	case o.Lora.Rank < 1:
		return fmt.Errorf("rank must be positive")
	}
	if !isTrainOn(o.TrainOn) {
		return fmt.Errorf("train_on must be one of %s, got %q", strings.Join(chat.TrainOnRules(), ", "), o.TrainOn)
	}
	return nil
}

func isTrainOn(s string) bool {
	for _, r := range chat.TrainOnRules() {
		if r == s {
			return true
		}
	}
	return false
}

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

func toData(r chat.Renderer, convs []Conversation, o *SFTOptions) ([]tinkerapi.Datum, error) {
	out := make([]tinkerapi.Datum, len(convs))
	for i, c := range convs {
		d, err := ConversationDatum(r, c.Messages, o.TrainOn, o.MaxLength, o.Truncate)
		if err != nil {
			if strings.Contains(err.Error(), "longer than max_length") {
				err = fmt.Errorf("%w (truncate=True cuts it)", err)
			}
			return nil, fmt.Errorf("%s: %w", c.Where, err)
		}
		out[i] = d
	}
	return out, nil
}

// runConfig is log_dir/config.json: what must match for a run to resume.
type runConfig struct {
	BaseModel    string  `json:"base_model"`
	DataSHA256   string  `json:"data_sha256"`
	EvalSHA256   string  `json:"eval_sha256,omitempty"`
	Rank         int     `json:"rank"`
	Seed         *int64  `json:"seed"`
	TrainMLP     bool    `json:"train_mlp"`
	TrainAttn    bool    `json:"train_attn"`
	TrainUnembed bool    `json:"train_unembed"`
	Renderer     string  `json:"renderer"`
	TrainOn      string  `json:"train_on"`
	MaxLength    int     `json:"max_length"`
	BatchSize    int     `json:"batch_size"`
	Epochs       int     `json:"epochs"`
	LearningRate float64 `json:"learning_rate"`
	Schedule     string  `json:"lr_schedule"`
	SaveEvery    int     `json:"save_every"`
	EvalEvery    int     `json:"eval_every"`
	Name         string  `json:"name"`
}

func dataHash(data []tinkerapi.Datum) string {
	if len(data) == 0 {
		return ""
	}
	h := sha256.New()
	for _, d := range data {
		binary.Write(h, binary.LittleEndian, int64(len(d.ModelInput)))
		for _, t := range d.ModelInput {
			binary.Write(h, binary.LittleEndian, int32(t))
		}
		binary.Write(h, binary.LittleEndian, d.LossFnInputs["target_tokens"].Int64)
		binary.Write(h, binary.LittleEndian, d.LossFnInputs["weights"].Float32)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// writeFileAtomic replaces path with data, never leaving it half-written.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// openLogDir prepares log_dir for cfg and returns the saved state and
// metrics to resume from (zero when starting afresh).
func openLogDir(dir string, cfg runConfig) (sftState, []StepMetrics, error) {
	want, _ := json.MarshalIndent(cfg, "", "  ")
	got, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return sftState{}, nil, err
		}
		return sftState{}, nil, writeFileAtomic(filepath.Join(dir, "config.json"), append(want, '\n'))
	}
	if err != nil {
		return sftState{}, nil, err
	}
	if diff := configDiff(got, want); diff != "" {
		return sftState{}, nil, fmt.Errorf("log_dir %s holds a run with other settings (%s); use another log_dir", dir, diff)
	}
	var st sftState
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return sftState{}, nil, nil // no step was saved: start again
	}
	if err != nil {
		return sftState{}, nil, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return sftState{}, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "state.json"), err)
	}
	// Keep the metrics of the steps the saved state includes.
	var kept []StepMetrics
	if b, err := os.ReadFile(filepath.Join(dir, "metrics.jsonl")); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			var m StepMetrics
			if json.Unmarshal(line, &m) == nil && m.Step <= st.Step && m.Step > len(kept) {
				kept = append(kept, m)
			}
		}
	}
	var buf bytes.Buffer
	for _, m := range kept {
		line, _ := json.Marshal(m)
		buf.Write(append(line, '\n'))
	}
	return st, kept, writeFileAtomic(filepath.Join(dir, "metrics.jsonl"), buf.Bytes())
}

func configDiff(got, want []byte) string {
	var a, b map[string]any
	json.Unmarshal(got, &a)
	json.Unmarshal(want, &b)
	var diffs []string
	for _, k := range sortedAny(b) {
		if fmt.Sprint(a[k]) != fmt.Sprint(b[k]) {
			diffs = append(diffs, fmt.Sprintf("%s was %v, now %v", k, a[k], b[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

func sortedAny(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SFT runs supervised fine-tuning (see the sft() builtin's documentation).
// Every input is checked before anything is written to LogDir or sent.
func SFT(ctx context.Context, s *tinkerapi.Session, o SFTOptions) (*SFTResult, error) {
	if err := o.check(); err != nil {
		return nil, userErr(err.Error(), "")
	}
	r, err := rendererFor(ctx, o.BaseModel, o.Renderer)
	if err != nil {
		return nil, userErr(err.Error(), "")
	}
	data, err := toData(r, o.Data, &o)
	if err != nil {
		return nil, userErr(err.Error(), "")
	}
	eval, err := toData(r, o.Eval, &o)
	if err != nil {
		return nil, userErr("eval_data: "+err.Error(), "")
	}
	perEpoch := (len(data) + o.BatchSize - 1) / o.BatchSize
	run := &sftRun{o: &o, data: data, eval: eval, perEpoch: perEpoch, total: perEpoch * o.Epochs,
		// Futures of a submitted step are awaited even after an interrupt:
		// the server runs them anyway, and the saved state must match the
		// metrics.
		wait: context.WithoutCancel(ctx), prefix: o.Name}
	run.res = &SFTResult{BaseModel: o.BaseModel, Total: run.total, LogDir: o.LogDir}
	if run.prefix == "" {
		run.prefix = "sft"
	}
	if o.Lora.Seed != nil {
		run.seed = uint64(*o.Lora.Seed)
	}
	if o.LogDir != "" {
		cfg := runConfig{BaseModel: o.BaseModel, DataSHA256: dataHash(data), EvalSHA256: dataHash(eval), Rank: o.Lora.Rank, Seed: o.Lora.Seed,
			TrainMLP: o.Lora.TrainMLP, TrainAttn: o.Lora.TrainAttn, TrainUnembed: o.Lora.TrainUnembed, Renderer: r.Name(), TrainOn: o.TrainOn,
			MaxLength: o.MaxLength, BatchSize: o.BatchSize, Epochs: o.Epochs, LearningRate: o.LearningRate, Schedule: o.Schedule,
			SaveEvery: o.SaveEvery, EvalEvery: o.EvalEvery, Name: o.Name}
		if run.st, run.res.Steps, err = openLogDir(o.LogDir, cfg); err != nil {
			return nil, userErr("log_dir: "+err.Error(), "")
		}
		run.res.StatePath, run.res.SamplerPath = run.st.StatePath, run.st.SamplerPath
	}
	if run.st.Step == run.total && run.st.SamplerPath != "" {
		return run.res, nil // finished earlier
	}
	if run.st.StatePath != "" {
		run.tc, err = s.CreateTrainingClientFromState(ctx, run.st.StatePath, tinkerapi.StateOptions{Optimizer: true, BaseModel: o.BaseModel})
	} else {
		run.tc, err = s.CreateTrainingClient(ctx, o.BaseModel, o.Lora, map[string]string{"created_by": "tinker sft"})
	}
	if err != nil {
		return nil, err
	}
	if o.LogDir != "" {
		if run.metrics, err = os.OpenFile(filepath.Join(o.LogDir, "metrics.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
			return nil, fmt.Errorf("log_dir: %w", err)
		}
		defer run.metrics.Close()
	}
	return run.train(ctx)
}

// sftRun is one sft() call between setup and its result.
type sftRun struct {
	o               *SFTOptions
	tc              *tinkerapi.TrainingClient
	res             *SFTResult
	st              sftState // the last saved state
	data, eval      []tinkerapi.Datum
	perEpoch, total int
	prefix          string
	seed            uint64
	wait            context.Context // for futures already submitted
	metrics         *os.File        // log_dir/metrics.jsonl, or nil

	finished int       // steps whose results are in
	lastDone time.Time // when the last step's results came in
}

// sftStep is a submitted step.
type sftStep struct {
	step   int
	batch  []tinkerapi.Datum
	tokens int
	lr     float64
	fb     *tinkerapi.Future[*tinkerapi.ForwardBackwardOutput]
	opt    *tinkerapi.Future[*tinkerapi.OptimStepResponse]
}

// train runs the remaining steps, pipelined: the next step is submitted
// before the current one is awaited (at most two in flight), except after
// a barrier. On an interrupt it saves the last finished step's state.
func (run *sftRun) train(ctx context.Context) (*SFTResult, error) {
	o := run.o
	start := run.st.Step
	run.finished, run.lastDone = start, time.Now()
	var queue []*sftStep
	next := start
	for {
		open := next < run.total && (o.MaxSteps == 0 || next-start < o.MaxSteps) && ctx.Err() == nil
		if open && len(queue) < 2 && (len(queue) == 0 || !run.barrier(queue[len(queue)-1].step)) {
			f, err := run.submit(ctx, next)
			if err == nil {
				queue = append(queue, f)
				next++
				continue
			}
			if ctx.Err() == nil {
				return nil, fmt.Errorf("step %d: %w", next+1, err)
			}
			// Interrupted while submitting: finish what was queued.
		}
		if len(queue) == 0 {
			break
		}
		if err := run.finish(queue[0]); err != nil {
			return nil, err
		}
		queue = queue[1:]
	}
	if run.finished == run.total {
		return run.res, nil
	}
	if run.finished > run.st.Step || run.st.StatePath == "" {
		if err := run.save(run.finished, false); err != nil {
			return nil, fmt.Errorf("save the state of step %d: %w", run.finished, err)
		}
	}
	if ctx.Err() != nil {
		return run.res, &InterruptedError{Step: run.finished, Total: run.total, StatePath: run.res.StatePath, LogDir: o.LogDir}
	}
	return run.res, nil
}

// barrier reports whether evaluation or a save follows step: those must
// see its weights, so the next step waits until it has finished.
func (run *sftRun) barrier(step int) bool {
	n := step + 1
	return n == run.total || run.o.SaveEvery > 0 && n%run.o.SaveEvery == 0 ||
		len(run.eval) > 0 && run.o.EvalEvery > 0 && n%run.o.EvalEvery == 0
}

// submit sends step's forward_backward and optim_step back to back.
func (run *sftRun) submit(ctx context.Context, step int) (*sftStep, error) {
	f := &sftStep{step: step, lr: learningRate(run.o.Schedule, run.o.LearningRate, step, run.total)}
	for _, j := range batchOf(len(run.data), run.o.BatchSize, step, run.seed) {
		f.batch = append(f.batch, run.data[j])
		f.tokens += len(run.data[j].ModelInput)
	}
	adam := tinkerapi.DefaultAdamParams()
	adam.LearningRate = f.lr
	var err error
	if f.fb, err = run.tc.ForwardBackwardAsync(ctx, tinkerapi.ForwardBackwardInput{Data: f.batch, LossFn: "cross_entropy"}); err != nil {
		return nil, err
	}
	// If this fails, the step's gradients stay unapplied and the run
	// stops at the step before, whose weights are unchanged.
	f.opt, err = run.tc.OptimStepAsync(ctx, adam)
	return f, err
}

// finish awaits a step, records its metrics, and evaluates and saves
// where the schedule says.
func (run *sftRun) finish(f *sftStep) error {
	o := run.o
	out, err := f.fb.Wait(run.wait)
	if err == nil {
		_, err = f.opt.Wait(run.wait)
	}
	if err != nil {
		return fmt.Errorf("step %d: %w", f.step+1, err)
	}
	loss, _ := out.Loss()
	m := StepMetrics{Step: f.step + 1, Epoch: f.step/run.perEpoch + 1, Loss: loss / trainedWeight(f.batch), LearningRate: f.lr,
		Tokens: f.tokens, Sequences: len(f.batch)}
	last := f.step+1 == run.total
	if len(run.eval) > 0 && (last || o.EvalEvery > 0 && (f.step+1)%o.EvalEvery == 0) {
		nll, err := evalNLL(run.wait, run.tc, run.eval, o.BatchSize)
		if err != nil {
			return fmt.Errorf("evaluate after step %d: %w", f.step+1, err)
		}
		m.EvalNLL = &nll
	}
	now := time.Now()
	m.Seconds, run.lastDone = now.Sub(run.lastDone).Seconds(), now
	run.res.Steps = append(run.res.Steps, m)
	run.finished = f.step + 1
	if run.metrics != nil {
		line, _ := json.Marshal(m)
		if _, err := run.metrics.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("log_dir: %w", err)
		}
	}
	if o.OnStep != nil {
		o.OnStep(m, run.total)
	}
	if last || o.SaveEvery > 0 && (f.step+1)%o.SaveEvery == 0 {
		if err := run.save(f.step+1, last); err != nil {
			return fmt.Errorf("save after step %d: %w", f.step+1, err)
		}
		run.st.Step = f.step + 1
	}
	return nil
}

// save stores the training state after step (and, at the end, the sampler
// weights) and records it in log_dir/state.json.
func (run *sftRun) save(step int, final bool) error {
	name := fmt.Sprintf("%s-%06d", run.prefix, step)
	if final {
		name = run.prefix + "-final"
	}
	path, err := run.tc.SaveState(run.wait, name, nil)
	if err != nil {
		return err
	}
	next := sftState{Step: step, StatePath: path}
	if final {
		if next.SamplerPath, err = run.tc.SaveWeightsForSampler(run.wait, name, nil); err != nil {
			return err
		}
	}
	if run.o.LogDir != "" {
		b, _ := json.MarshalIndent(next, "", "  ")
		if err := writeFileAtomic(filepath.Join(run.o.LogDir, "state.json"), append(b, '\n')); err != nil {
			return fmt.Errorf("log_dir: %w", err)
		}
	}
	run.res.StatePath, run.res.SamplerPath = next.StatePath, next.SamplerPath
	return nil
}

// evalNLL is the mean negative log-likelihood per trained token of data
// under the current weights; all forward passes are submitted before any
// is awaited.
func evalNLL(ctx context.Context, tc *tinkerapi.TrainingClient, data []tinkerapi.Datum, batchSize int) (float64, error) {
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
	return sum / trainedWeight(data), nil
}
