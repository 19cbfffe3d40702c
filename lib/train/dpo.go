package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// DPO defaults of dpo() and `tinker train dpo`, the cookbook's: the
// temperature β, and a learning rate that does not follow the SFT rule
// (lr_for) but is the cookbook's recommended starting point for DPO.
const (
	DefaultDPOBeta         = 0.1
	DefaultDPOLearningRate = 1e-5
)

// Pair is one preference row: a prompt and two answers, the chosen one
// preferred.
type Pair struct {
	Prompt           []chat.Message
	Chosen, Rejected string
	Where            string
}

// Pairs reads rows of {"messages": [prompt turns], "chosen": text,
// "rejected": text}.
func Pairs(rows []Row) ([]Pair, error) {
	out := make([]Pair, len(rows))
	for i, r := range rows {
		m, err := r.fields()
		if err != nil {
			return nil, err
		}
		p := Pair{Where: r.Where}
		if p.Prompt, err = r.messages(m); err != nil {
			return nil, err
		}
		if p.Chosen, err = r.str(m, "chosen"); err != nil {
			return nil, err
		}
		if p.Rejected, err = r.str(m, "rejected"); err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// DPOOptions is one direct preference optimisation run.
type DPOOptions struct {
	RunOptions
	BaseModel    string // or a state to start from, as in SFTOptions
	Data         []Pair
	Lora         tinkerapi.LoraConfig
	Renderer     string
	Beta         float64
	BatchSize    int // pairs per step
	Epochs       int
	LearningRate float64 // 0: DefaultDPOLearningRate
	Schedule     string
	MaxLength    int
}

// DPOMetrics is one step of DPO, measured by the forward pass before the
// step's update.
type DPOMetrics struct {
	Step           int     `json:"step"`
	Epoch          int     `json:"epoch"`
	Loss           float64 `json:"loss"`
	Accuracy       float64 `json:"accuracy"` // share of pairs with a positive margin
	Margin         float64 `json:"margin"`   // mean chosen_reward − rejected_reward
	ChosenReward   float64 `json:"chosen_reward"`
	RejectedReward float64 `json:"rejected_reward"`
	LearningRate   float64 `json:"learning_rate"`
	Tokens         int     `json:"tokens"`
	Pairs          int     `json:"num_pairs"`
	Seconds        float64 `json:"time"`
}

func (m DPOMetrics) StepNumber() int                     { return m.Step }
func (m DPOMetrics) Headline() (string, float64)         { return "loss", m.Loss }
func (m DPOMetrics) Throughput() (tokens int, s float64) { return m.Tokens, m.Seconds }

// DPOResult is the outcome of a DPO run.
type DPOResult = Result[DPOMetrics]

func (o *DPOOptions) check() error {
	sft := SFTOptions{RunOptions: o.RunOptions, Lora: o.Lora, TrainOn: chat.TrainLastAssistant, Reduction: ReductionNone, BatchSize: o.BatchSize, Epochs: o.Epochs,
		LearningRate: o.LearningRate, Schedule: o.Schedule, MaxLength: o.MaxLength}
	if err := sft.check(); err != nil {
		return err
	}
	if !positive(o.Beta) {
		return fmt.Errorf("beta must be positive")
	}
	return nil
}

// dpoConfig is log_dir/config.json of DPO.
type dpoConfig struct {
	BaseModel    string  `json:"base_model"`
	From         string  `json:"from,omitempty"`
	DataSHA256   string  `json:"data_sha256"`
	Rank         int     `json:"rank"`
	Seed         *int64  `json:"seed"`
	Renderer     string  `json:"renderer"`
	Beta         float64 `json:"beta"`
	MaxLength    int     `json:"max_length"`
	BatchSize    int     `json:"batch_size"`
	Epochs       int     `json:"epochs"`
	LearningRate float64 `json:"learning_rate"`
	Schedule     string  `json:"lr_schedule"`
	SaveEvery    int     `json:"save_every"`
	Name         string  `json:"name"`
}

// pairData renders each pair as two datums, chosen then rejected, that
// weigh the answer's tokens only, 0/1: DPO compares sequence
// log-likelihoods (token sums), as the cookbook's does.
func pairData(r chat.Renderer, pairs []Pair, maxLength int) ([]tinkerapi.Datum, error) {
	out := make([]tinkerapi.Datum, 0, 2*len(pairs))
	for _, p := range pairs {
		for _, answer := range []string{p.Chosen, p.Rejected} {
			msgs := append(append([]chat.Message(nil), p.Prompt...), chat.Message{Role: "assistant", Content: answer})
			d, err := ConversationDatum(r, msgs, DatumOptions{TrainOn: chat.TrainLastAssistant, MaxLength: maxLength, Reduction: ReductionNone})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Where, err)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// DPO runs direct preference optimisation (see the dpo() builtin's
// documentation). The reference model is the starting policy: its
// log-likelihoods of every answer are computed once, before the first
// step, and kept in LogDir/reference.json so a resumed run reuses them.
func DPO(ctx context.Context, s Session, o DPOOptions) (*DPOResult, error) {
	if err := o.check(); err != nil {
		return nil, userErr(err.Error())
	}
	st, err := begin(ctx, s, &o.RunOptions, &o.BaseModel, &o.LearningRate, &o.Lora, dpoRate)
	if err != nil {
		return nil, err
	}
	r, err := modelref.Renderer(ctx, o.BaseModel, o.Renderer)
	if err != nil {
		return nil, userErr(err.Error())
	}
	data, err := pairData(r, o.Data, o.MaxLength)
	if err != nil {
		return nil, userErr(err.Error())
	}
	perEpoch := (len(o.Data) + o.BatchSize - 1) / o.BatchSize
	cfg := dpoConfig{BaseModel: o.BaseModel, From: st.from, DataSHA256: dataHash(data), Rank: o.Lora.Rank, Seed: o.Lora.Seed, Renderer: r.Name(),
		Beta: o.Beta, MaxLength: o.MaxLength, BatchSize: o.BatchSize, Epochs: o.Epochs, LearningRate: o.LearningRate,
		Schedule: o.Schedule, SaveEvery: o.SaveEvery, Name: o.Name}
	run, err := newRunner[DPOMetrics](ctx, &o.RunOptions, st, perEpoch*o.Epochs, cfg, "dpo")
	if err != nil {
		return nil, logDirErr(err)
	}
	if run.done() {
		return run.res, nil
	}
	if err := run.open(ctx, s, o.Lora, "tinker dpo"); err != nil {
		return nil, run.stopped(ctx, err)
	}
	defer run.close()
	l := &dpoLoop{runner: run, o: &o, data: data, perEpoch: perEpoch}
	if o.Lora.Seed != nil {
		l.seed = uint64(*o.Lora.Seed)
	}
	if l.ref, err = l.reference(ctx); err != nil {
		return nil, run.stopped(ctx, fmt.Errorf("reference log-likelihoods: %w", err))
	}
	return run.drive(ctx, l)
}

// dpoLoop is DPO's stepper: per step a forward pass over the batch's
// answers, then a cross_entropy forward_backward whose weights are the
// DPO loss's gradient, and Adam.
type dpoLoop struct {
	*runner[DPOMetrics]
	o        *DPOOptions
	data     []tinkerapi.Datum // chosen, rejected for each pair
	ref      []float64         // reference log-likelihood of each datum
	perEpoch int
	seed     uint64
}

func (l *dpoLoop) barrier(int) bool { return false }

// reference reads the reference log-likelihoods from log_dir, or computes
// them with the starting weights (and stores them there).
func (l *dpoLoop) reference(ctx context.Context) ([]float64, error) {
	path := ""
	if l.log != nil {
		path = filepath.Join(l.log.dir, "reference.json")
		b, err := os.ReadFile(path)
		if err == nil {
			var ref []float64
			if err := json.Unmarshal(b, &ref); err != nil || len(ref) != len(l.data) {
				return nil, fmt.Errorf("%s does not hold %d log-likelihoods; use another log_dir", path, len(l.data))
			}
			return ref, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if l.st.StatePath != "" {
			return nil, fmt.Errorf("%s is missing, so the saved state cannot be resumed; use another log_dir", path)
		}
	}
	ref, err := seqLogprobs(ctx, l.tc, l.data, 2*l.o.BatchSize)
	if err != nil || path == "" {
		return ref, err
	}
	b, _ := json.Marshal(ref)
	return ref, atomicfile.WriteFile(path, b)
}

// seqLogprobs is each datum's weighted log-likelihood under the current
// weights, all forward passes submitted before any is awaited.
func seqLogprobs(ctx context.Context, tc Client, data []tinkerapi.Datum, chunk int) ([]float64, error) {
	var futs []*tinkerapi.Future[*tinkerapi.ForwardBackwardOutput]
	for i := 0; i < len(data); i += chunk {
		f, err := tc.ForwardAsync(ctx, tinkerapi.ForwardBackwardInput{Data: data[i:min(i+chunk, len(data))], LossFn: "cross_entropy"})
		if err != nil {
			return nil, err
		}
		futs = append(futs, f)
	}
	var out []float64
	for _, f := range futs {
		res, err := f.Wait(ctx)
		if err != nil {
			return nil, err
		}
		for _, lp := range res.Logprobs() {
			out = append(out, weighted(data[len(out)], lp))
		}
	}
	if len(out) != len(data) {
		return nil, fmt.Errorf("forward returned %d log-likelihoods for %d sequences", len(out), len(data))
	}
	return out, nil
}

// weighted is Σ weight·logprob over a datum's targets.
func weighted(d tinkerapi.Datum, lp []float32) float64 {
	w := d.LossFnInputs["weights"].Float32
	s := 0.0
	for i := range min(len(w), len(lp)) {
		s += float64(w[i]) * float64(lp[i])
	}
	return s
}

// DPOLoss is the DPO loss of one pair, −log σ(β·[(pc − rc) − (pr − rr)]),
// with pc, pr the policy's and rc, rr the reference's log-likelihoods of
// the chosen and rejected answers, and its derivatives with respect to pc
// and pr.
func DPOLoss(beta, pc, rc, pr, rr float64) (loss, dpc, dpr float64) {
	z := beta * ((pc - rc) - (pr - rr))
	loss = softplus(-z)      // −log σ(z)
	g := -beta * sigmoid(-z) // ∂loss/∂z · ∂z/∂pc
	return loss, g, -g
}

func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// submit runs the step's forward pass (which sees the previous step's
// weights: a training client's requests run in order), then queues the
// weighted forward_backward and the optimizer step.
func (l *dpoLoop) submit(ctx context.Context, step int) (func() (DPOMetrics, error), error) {
	lr := learningRate(l.o.Schedule, l.o.LearningRate, step, l.total)
	idx := batchOf(len(l.o.Data), l.o.BatchSize, step, l.seed)
	batch := make([]tinkerapi.Datum, 0, 2*len(idx))
	var ref []float64
	m := DPOMetrics{Step: step + 1, Epoch: step/l.perEpoch + 1, LearningRate: lr, Pairs: len(idx)}
	for _, j := range idx {
		batch = append(batch, l.data[2*j], l.data[2*j+1])
		ref = append(ref, l.ref[2*j], l.ref[2*j+1])
		m.Tokens += len(l.data[2*j].ModelInput) + len(l.data[2*j+1].ModelInput)
	}
	// The step's requests use the uncancelled context, as SFT's do.
	pol, err := seqLogprobs(l.wait, l.tc, batch, len(batch))
	if err != nil {
		return nil, err
	}
	weighted := l.lossWeights(batch, pol, ref, &m)
	fb, err := l.tc.ForwardBackwardAsync(l.wait, tinkerapi.ForwardBackwardInput{Data: weighted, LossFn: "cross_entropy"})
	if err != nil {
		return nil, err
	}
	opt, err := l.tc.OptimStepAsync(l.wait, adam(lr))
	if err != nil {
		return nil, err
	}
	return func() (DPOMetrics, error) {
		_, err := fb.Wait(l.wait)
		if err == nil {
			_, err = opt.Wait(l.wait)
		}
		if err != nil {
			return m, fmt.Errorf("step %d: %w", m.Step, err)
		}
		m.Seconds = l.lap()
		return m, nil
	}, nil
}

// lossWeights fills m's loss and rewards (means over the batch's pairs)
// and returns the batch reweighted so that cross_entropy's gradient is the
// mean DPO loss's: a token's weight becomes −∂loss/∂(its logprob), its
// answer's derivative times its own weight.
func (l *dpoLoop) lossWeights(batch []tinkerapi.Datum, pol, ref []float64, m *DPOMetrics) []tinkerapi.Datum {
	n := float64(len(batch) / 2)
	out := make([]tinkerapi.Datum, len(batch))
	for k := 0; k < len(batch); k += 2 {
		loss, dpc, dpr := DPOLoss(l.o.Beta, pol[k], ref[k], pol[k+1], ref[k+1])
		cr, rr := l.o.Beta*(pol[k]-ref[k]), l.o.Beta*(pol[k+1]-ref[k+1])
		m.Loss += loss / n
		m.ChosenReward += cr / n
		m.RejectedReward += rr / n
		m.Margin += (cr - rr) / n
		if cr > rr {
			m.Accuracy += 1 / n
		}
		out[k], out[k+1] = scaled(batch[k], -dpc/n), scaled(batch[k+1], -dpr/n)
	}
	return out
}

// scaled is d with its weights multiplied by c.
func scaled(d tinkerapi.Datum, c float64) tinkerapi.Datum {
	w := d.LossFnInputs["weights"].Float32
	sw := make([]float32, len(w))
	for i, x := range w {
		sw[i] = float32(float64(x) * c)
	}
	return tinkerapi.Datum{ModelInput: d.ModelInput, LossFnInputs: map[string]tinkerapi.Tensor{
		"target_tokens": d.LossFnInputs["target_tokens"], "weights": tinkerapi.Float32s(sw)}}
}
