package engine

import (
	"fmt"
	"slices"
	"strings"
)

// LoRA on the experts is shaped as the service and lib/peft shape it:
// one stacked tensor pair per matrix kind and layer, named after the
// Mixtral convention, w1 = gate_proj, w3 = up_proj, w2 = down_proj:
//
//	mlp.experts.w1.lora_A.weight [experts, r, hidden]  lora_B [experts, moe_inter, r]
//	mlp.experts.w3 likewise; mlp.experts.w2.lora_A [experts, r, moe_inter], lora_B [experts, hidden, r]
//
// Slice e of a pair is expert e's own adapter. The router is not adapted.

// expertLoRA is one expert's adapted matrices.
type expertLoRA struct{ gate, up, down *loraPair }

// expertKinds maps the stacked tensors' names to the matrix they adapt
// (the `which` of expertModule).
var expertKinds = map[string]int{"experts.w1": 0, "experts.w3": 1, "experts.w2": 2}

// expertPair is the adapter of module (>= modExpert), or nil.
func (ll *loraLayer) expertPair(module int) *loraPair {
	if ll.experts == nil {
		return nil
	}
	e := &ll.experts[(module-modExpert)/3]
	return [...]*loraPair{e.gate, e.up, e.down}[(module-modExpert)%3]
}

// slot returns where expert e's adapter of matrix which goes.
func (e *expertLoRA) slot(which int) **loraPair {
	return [...]**loraPair{&e.gate, &e.up, &e.down}[which]
}

// expertDims is the input and output width of an expert matrix.
func expertDims(c Config, which int) (in, out int) {
	if which == 2 {
		return c.MoEIntermediate, c.Hidden
	}
	return c.Hidden, c.MoEIntermediate
}

// setExperts checks layer i's expert adapter mod, a stacked pair
// ("experts.w1", ...) or one expert's ("experts.3.gate_proj", as PEFT
// names modules of transformers 4.x), and installs it per expert with B
// scaled by scale.
func (ll *loraLayer) setExperts(c Config, i int, mod string, a, b *Tensor, rank int, scale float32) error {
	which, ok := expertKinds[mod]
	first, n := 0, c.Experts
	if !ok {
		var proj string
		if _, err := fmt.Sscanf(strings.ReplaceAll(mod, ".", " "), "experts %d %s", &first, &proj); err != nil ||
			first < 0 || first >= c.Experts || !slices.Contains([]string{"gate_proj", "up_proj", "down_proj"}, proj) {
			return fmt.Errorf("lora: unsupported target module %s (the model has %d experts)", mod, c.Experts)
		}
		which, n = map[string]int{"gate_proj": 0, "up_proj": 1, "down_proj": 2}[proj], 1
	}
	if !c.IsMoELayer(i) {
		return fmt.Errorf("lora: adapter has %s for layer %d, which has no experts in this model", mod, i)
	}
	in, out := expertDims(c, which)
	key := fmt.Sprintf("%d.%s", i, mod)
	if a.Data == nil || b.Data == nil {
		return fmt.Errorf("lora: %s must be float32 tensors", key)
	}
	wantA, wantB := []int{rank, in}, []int{out, rank}
	if ok {
		wantA, wantB = append([]int{n}, wantA...), append([]int{n}, wantB...)
	}
	if !slices.Equal(a.Shape, wantA) || len(a.Data) != n*rank*in {
		return fmt.Errorf("lora: %s lora_A has shape %v, want %v", key, a.Shape, wantA)
	}
	if !slices.Equal(b.Shape, wantB) || len(b.Data) != n*out*rank {
		return fmt.Errorf("lora: %s lora_B has shape %v, want %v", key, b.Shape, wantB)
	}
	if ll.experts == nil {
		ll.experts = make([]expertLoRA, c.Experts)
	}
	for k := range n {
		slot := ll.experts[first+k].slot(which)
		if *slot != nil {
			return fmt.Errorf("lora: layer %d expert %d's %s is adapted twice", i, first+k, [...]string{"gate_proj", "up_proj", "down_proj"}[which])
		}
		bs := make([]float32, out*rank)
		for j, v := range b.Data[k*out*rank : (k+1)*out*rank] {
			bs[j] = v * scale
		}
		*slot = &loraPair{a: mat{rows: rank, cols: in, data: a.Data[k*rank*in : (k+1)*rank*in]}, b: mat{rows: out, cols: rank, data: bs}}
	}
	return nil
}
