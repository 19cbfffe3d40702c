package engine

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tinkershell/tinker/lib/lazyre"
)

// LoRA is a low-rank adapter applied on the fly: y = W·x + B'·(A·x) with
// B' = (alpha/r)·B. Applying it on the fly (instead of merging W + B'A into a
// copy of W) keeps the base weights shared and untouched, so samplers of
// many adapters of the same base model cost only the adapter's memory
// (r·(in+out) per matrix), and loading an adapter is instant. The extra
// compute is r·(in+out) per matrix per token, small for the usual r ≪ d.
type LoRA struct {
	Rank  int
	Alpha float64
	Scale float64 // alpha/r (or alpha/√r with rsLoRA)

	layers []loraLayer
	lmHead *loraPair
}

type loraPair struct {
	a mat // [r, in]
	b mat // [out, r], already multiplied by Scale
}

type loraLayer struct {
	q, k, v, o, gate, up, down *loraPair
	experts                    []expertLoRA // mixture-of-experts layers: per expert, nil when not adapted
}

// Modules of a layer, for LoRA.pair.
const (
	modQ = iota
	modK
	modV
	modO
	modGate
	modUp
	modDown
)

// pair returns the adapter of module (modQ...) in layer, or of lm_head
// when layer < 0; nil when the adapter leaves that matrix alone.
func (l *LoRA) pair(layer, module int) *loraPair {
	if layer < 0 {
		return l.lmHead
	}
	ll := &l.layers[layer]
	if module >= modExpert {
		return ll.expertPair(module)
	}
	return [...]*loraPair{ll.q, ll.k, ll.v, ll.o, ll.gate, ll.up, ll.down}[module]
}

// loraKey is compiled on first use: most tinker runs never load an adapter.
var loraKey = lazyre.New(`^(?:base_model\.model\.)?(?:model\.layers\.(\d+)\.(?:self_attn|mlp)\.(experts\.w[123]|experts\.\d+\.[a-z]+_proj|shared_experts\.[a-z]+_proj|[a-z_]+)|(lm_head))\.lora_([AB])(?:\.[A-Za-z0-9_-]+)?\.weight$`)

// NewLoRA builds an adapter for a model with config c from PEFT-named
// tensors (base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight,
// ..., base_model.model.lm_head.lora_B.weight). A is [r, in], B is [out, r].
// The scale is alpha/r, or alpha/√r when rsLoRA is set (PEFT use_rslora).
func NewLoRA(c Config, ts Tensors, rank int, alpha float64, rsLoRA bool) (*LoRA, error) {
	if rank <= 0 {
		return nil, fmt.Errorf("lora: rank must be positive, got %d", rank)
	}
	l := &LoRA{Rank: rank, Alpha: alpha, Scale: alpha / float64(rank), layers: make([]loraLayer, c.Layers)}
	if rsLoRA {
		l.Scale = alpha / math.Sqrt(float64(rank))
	}
	type half struct{ a, b *Tensor }
	pairs := map[string]*half{}
	for name, t := range ts {
		if c.TextPrefix != "" { // a PEFT adapter of the wrapper names its text model's modules
			name = strings.Replace(name, "base_model.model."+c.TextPrefix, "base_model.model.", 1)
		}
		m := loraKey.FindStringSubmatch(name)
		if m == nil {
			return nil, fmt.Errorf("lora: unsupported adapter tensor %s (only q/k/v/o, gate/up/down, experts.w1/w2/w3 and lm_head are supported)", name)
		}
		key := "lm_head"
		if m[3] == "" {
			key = m[1] + "." + m[2]
		}
		p := pairs[key]
		if p == nil {
			p = &half{}
			pairs[key] = p
		}
		t := t
		if m[4] == "A" {
			p.a = &t
		} else {
			p.b = &t
		}
	}
	keys := make([]string, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic error messages
	for _, key := range keys {
		p := pairs[key]
		if p.a == nil || p.b == nil {
			return nil, fmt.Errorf("lora: %s has only one of lora_A and lora_B", key)
		}
		var slot **loraPair
		var in, out int
		if key == "lm_head" {
			slot, in, out = &l.lmHead, c.Hidden, c.VocabSize
		} else {
			idx, mod, _ := strings.Cut(key, ".")
			i, _ := strconv.Atoi(idx)
			if i >= c.Layers {
				return nil, fmt.Errorf("lora: adapter has layer %d but the model has %d layers", i, c.Layers)
			}
			ll := &l.layers[i]
			if strings.HasPrefix(mod, "experts.") {
				if err := ll.setExperts(c, i, mod, p.a, p.b, rank, float32(l.Scale)); err != nil {
					return nil, err
				}
				continue
			}
			var err error
			if slot, in, out, err = loraSlot(c, i, ll, mod); err != nil {
				return nil, err
			}
		}
		if p.a.Data == nil || p.b.Data == nil {
			return nil, fmt.Errorf("lora: %s must be float32 tensors", key)
		}
		if len(p.a.Shape) != 2 || p.a.Shape[0] != rank || p.a.Shape[1] != in {
			return nil, fmt.Errorf("lora: %s lora_A has shape %v, want [%d %d]", key, p.a.Shape, rank, in)
		}
		if len(p.b.Shape) != 2 || p.b.Shape[0] != out || p.b.Shape[1] != rank {
			return nil, fmt.Errorf("lora: %s lora_B has shape %v, want [%d %d]", key, p.b.Shape, out, rank)
		}
		b := scaled(p.b.Data, float32(l.Scale))
		*slot = &loraPair{a: mat{rows: rank, cols: in, data: p.a.Data}, b: mat{rows: out, cols: rank, data: b}}
	}
	return l, nil
}

// Modules reports how many matrices the adapter modifies.
func (l *LoRA) Modules() int {
	n := 0
	if l.lmHead != nil {
		n++
	}
	for _, ll := range l.layers {
		for _, p := range []*loraPair{ll.q, ll.k, ll.v, ll.o, ll.gate, ll.up, ll.down} {
			if p != nil {
				n++
			}
		}
		for _, e := range ll.experts {
			for _, p := range []*loraPair{e.gate, e.up, e.down} {
				if p != nil {
					n++
				}
			}
		}
	}
	return n
}

// loraSlot is where layer i's adapter of module mod goes, with the
// matrix's input and output widths.
func loraSlot(c Config, i int, ll *loraLayer, mod string) (slot **loraPair, in, out int, err error) {
	if c.MLA != nil {
		return mlaLoRASlot(c, i, ll, mod)
	}
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	switch mod {
	case "q_proj":
		return &ll.q, c.Hidden, qd, nil
	case "k_proj":
		return &ll.k, c.Hidden, kvd, nil
	case "v_proj":
		return &ll.v, c.Hidden, kvd, nil
	case "o_proj":
		return &ll.o, qd, c.Hidden, nil
	case "gate_proj":
		return &ll.gate, c.Hidden, c.Intermediate, nil
	case "up_proj":
		return &ll.up, c.Hidden, c.Intermediate, nil
	case "down_proj":
		return &ll.down, c.Intermediate, c.Hidden, nil
	}
	return nil, 0, 0, fmt.Errorf("lora: unsupported target module %s", mod)
}
