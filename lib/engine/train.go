package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tinkershell/tinker/lib/peft"
)

// LoRAConfig shapes a trainable adapter, as create_model asks for it.
type LoRAConfig struct {
	Rank         int
	Alpha        float64 // lora_alpha; 0 means peft.DefaultAlpha
	TrainAttn    bool    // q/k/v/o projections
	TrainMLP     bool    // gate/up/down projections
	TrainUnembed bool    // the output layer (lm_head)
	Seed         uint64  // initialises lora_A (as a fresh checkpoint of lib/peft does)
}

// param is one LoRA tensor with its accumulated gradient and AdamW moments.
type param struct {
	name       string // PEFT tensor name
	rows, cols int
	w          []float32 // value (lora_B unscaled, as PEFT stores it)
	grad       []float32 // accumulated since the last optimizer step
	local      []float32 // the current datum's gradient, added to pending when the datum is done
	pending    []float32 // grad plus the datums of the running call; becomes grad when the call succeeds
	m, v       []float32 // AdamW first and second moments
	isB        bool      // local holds the gradient of the scaled B' = scale·B
	experts    int       // > 0: a stacked [experts, rows/experts, cols] expert tensor (1: shared by all experts)
}

// trainModule is one adapted matrix: its two tensors and the scaled view the
// forward pass uses.
type trainModule struct {
	a, b *param
	pair *loraPair
}

type trainLayer struct {
	q, k, v, o, gate, up, down *trainModule
	experts                    []expertTrain // mixture-of-experts layers
}

// Trainer trains a LoRA adapter on a frozen base model: forward,
// forward_backward (accumulating gradients), optimizer steps, and the
// adapter and optimizer state. Its methods may be called from several
// goroutines; each call runs alone.
//
// Gradients are deterministic: each datum's gradient is computed on its own
// (every element summed in a fixed order) and added to the accumulated
// gradient in datum order, so the bits do not depend on how the data were
// split across calls, on GOMAXPROCS or on the machine.
type Trainer struct {
	mu     sync.Mutex
	base   *Model
	cfg    LoRAConfig
	scale  float64
	params []*param // in PEFT module order, A before B
	layers []trainLayer
	head   *trainModule
	lora   *LoRA // the adapter as the forward applies it
	model  *Model
	step   int64
	ar     arena
	slots  []*datumSlot // datums in flight at once (datumslots.go); the first's arena is ar
	// callLimit bounds CallBytes (SetCallLimit); 0: no bound.
	callLimit atomic.Int64
	// keepLimit is the kept-activation size above which a datum recomputes
	// its layers (recompute.go).
	keepLimit int64
}

// NewTrainer returns a trainer of a fresh adapter on base (any adapter on
// base is ignored): lora_A Kaiming-uniform from c.Seed, lora_B zero.
func NewTrainer(base *Model, c LoRAConfig) (*Trainer, error) {
	if c.Rank <= 0 {
		return nil, fmt.Errorf("LoRA rank must be positive, got %d", c.Rank)
	}
	if !c.TrainAttn && !c.TrainMLP && !c.TrainUnembed {
		return nil, fmt.Errorf("at least one of train_attn, train_mlp, train_unembed must be true")
	}
	if c.Alpha == 0 {
		c.Alpha = peft.DefaultAlpha
	}
	t := &Trainer{base: base.WithLoRA(nil), cfg: c, scale: c.Alpha / float64(c.Rank), keepLimit: DefaultKeepLimit}
	t.ar.poison = poisonScratch()
	mc := base.cfg
	t.lora = &LoRA{Rank: c.Rank, Alpha: c.Alpha, Scale: t.scale, layers: make([]loraLayer, mc.Layers)}
	t.layers = make([]trainLayer, mc.Layers)
	add := func(path string, in, out int, slot **loraPair) *trainModule {
		mod := &trainModule{
			a: newParam("base_model.model."+path+".lora_A.weight", c.Rank, in, false),
			b: newParam("base_model.model."+path+".lora_B.weight", out, c.Rank, true),
		}
		next := peft.InitA(c.Seed, mod.a.name, in)
		for i := range mod.a.w {
			mod.a.w[i] = next()
		}
		mod.pair = &loraPair{a: mat{rows: c.Rank, cols: in, data: mod.a.w}, b: mat{rows: out, cols: c.Rank, data: make([]float32, out*c.Rank)}}
		*slot = mod.pair
		t.params = append(t.params, mod.a, mod.b)
		return mod
	}
	h, qd, kvd := mc.Hidden, mc.Heads*mc.HeadDim, mc.KVHeads*mc.HeadDim
	for i := range mc.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		tl, ll := &t.layers[i], &t.lora.layers[i]
		if c.TrainAttn && mc.MLA != nil {
			mlaTrainModules(mc, p, tl, ll, add)
		} else if c.TrainAttn {
			tl.q = add(p+"self_attn.q_proj", h, qd, &ll.q)
			tl.k = add(p+"self_attn.k_proj", h, kvd, &ll.k)
			tl.v = add(p+"self_attn.v_proj", h, kvd, &ll.v)
			tl.o = add(p+"self_attn.o_proj", qd, h, &ll.o)
		}
		if c.TrainMLP && mc.IsMoELayer(i) {
			t.addExperts(p, tl, ll)
			sharedTrainModules(mc, p, tl, ll, add)
		} else if c.TrainMLP {
			tl.gate = add(p+"mlp.gate_proj", h, mc.Intermediate, &ll.gate)
			tl.up = add(p+"mlp.up_proj", h, mc.Intermediate, &ll.up)
			tl.down = add(p+"mlp.down_proj", mc.Intermediate, h, &ll.down)
		}
	}
	if c.TrainUnembed {
		t.head = add("lm_head", h, mc.VocabSize, &t.lora.lmHead)
	}
	t.model = t.base.WithLoRA(t.lora)
	t.syncScaled()
	return t, nil
}

func newParam(name string, rows, cols int, isB bool) *param {
	n := rows * cols
	return &param{name: name, rows: rows, cols: cols, isB: isB, w: make([]float32, n), grad: make([]float32, n),
		local: make([]float32, n), pending: make([]float32, n), m: make([]float32, n), v: make([]float32, n)}
}

// syncScaled recomputes the forward's scaled B' = scale·B from the
// parameters, with the same rounding NewLoRA uses, so the trainer's forward
// and a sampler loaded from the saved adapter compute the same bits.
func (t *Trainer) syncScaled() {
	s := float32(t.scale)
	done := map[*param]bool{} // a shared lora_B is every expert's
	for _, mod := range t.modules() {
		if done[mod.b] {
			continue
		}
		done[mod.b] = true
		for i, v := range mod.b.w {
			mod.pair.b.data[i] = v * s
		}
	}
}

// modules lists the adapted matrices in parameter order.
func (t *Trainer) modules() []*trainModule {
	var ms []*trainModule
	for _, tl := range t.layers {
		for _, m := range []*trainModule{tl.q, tl.k, tl.v, tl.o, tl.gate, tl.up, tl.down} {
			if m != nil {
				ms = append(ms, m)
			}
		}
		for _, e := range tl.experts {
			ms = append(ms, e.gate, e.up, e.down)
		}
	}
	if t.head != nil {
		ms = append(ms, t.head)
	}
	return ms
}

// Config returns the adapter's shape (with the alpha in effect).
func (t *Trainer) Config() LoRAConfig { return t.cfg }

// Base returns the base model.
func (t *Trainer) Base() *Model { return t.base }

// Sampler returns a model that samples with a copy of the current adapter,
// exactly as a sampler loaded from the adapter saved now would.
func (t *Trainer) Sampler() (*Model, error) {
	t.mu.Lock()
	ts := t.adapterTensors()
	t.mu.Unlock()
	l, err := NewLoRA(t.base.cfg, ts, t.cfg.Rank, t.cfg.Alpha, false)
	if err != nil {
		return nil, err
	}
	return t.base.WithLoRA(l), nil
}

// DatumOutput is what forward and forward_backward return per datum.
type DatumOutput struct {
	Logprobs        []float32 // log p(target_tokens[j]) at temperature 1, shaped as target_tokens
	ElementwiseLoss []float32 // each target's loss term (cross_entropy only), likewise
	Width           int       // the datum's Width: K for (N, K) targets, 0 for (N,)
}

// ForwardResult is the result of Forward or ForwardBackward.
type ForwardResult struct {
	Outputs []DatumOutput
	LossSum float64 // the loss: sum over datums and positions
}

// Metrics returns the result's metrics under their wire names.
func (r *ForwardResult) Metrics() map[string]float64 {
	return map[string]float64{"loss:sum": r.LossSum}
}

// ValidateData checks a request's data for loss l without computing
// anything; errors about one datum are *InputError.
func (t *Trainer) ValidateData(l Loss, data []Datum) error { return checkData(t.base.cfg, l, data) }

// Forward computes the loss and per-datum outputs without gradients.
func (t *Trainer) Forward(ctx context.Context, l Loss, data []Datum) (*ForwardResult, error) {
	return t.run(ctx, l, data, false)
}

// ForwardBackward is Forward that also adds the gradient of the loss to the
// gradients accumulated since the last optimizer step. A call that fails
// (invalid data, or ctx done before it finishes) leaves them unchanged.
func (t *Trainer) ForwardBackward(ctx context.Context, l Loss, data []Datum) (*ForwardResult, error) {
	return t.run(ctx, l, data, true)
}

func (t *Trainer) run(ctx context.Context, l Loss, data []Datum, backward bool) (*ForwardResult, error) {
	if err := t.ValidateData(l, data); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if backward {
		for _, p := range t.params {
			copy(p.pending, p.grad)
		}
	}
	lengths := lengthsOf(data)
	res := &ForwardResult{Outputs: make([]DatumOutput, len(data))}
	// Each arena holds the longest datum's (or group's) need from the
	// start: grown while a datum runs, the takes past its end would come
	// from the heap, freed only by the collector, on top of the new arena
	// (twice the memory).
	var err error
	if n := t.datumSlots(lengths, backward); n > 1 {
		err = t.runWaves(ctx, t.slotsFor(n, t.ActivationBytes(lengths, backward)), l, data, res, backward)
	} else {
		err = t.runGroups(ctx, t.slotsFor(1, t.groupBytes(lengths, backward))[0], l, data, res, backward)
	}
	if err != nil {
		return nil, err
	}
	if backward {
		for _, p := range t.params {
			p.grad, p.pending = p.pending, p.grad
		}
	}
	return res, nil
}

func rowsOf(slab []float32, n, width int) [][]float32 {
	rs := make([][]float32, n)
	for i := range rs {
		rs[i] = slab[i*width : (i+1)*width : (i+1)*width]
	}
	return rs
}
