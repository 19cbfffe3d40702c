package engine

import (
	"fmt"
	"slices"
	"strings"
)

// LoRA on the experts is shaped as the service and lib/peft shape it:
// one stacked tensor pair per matrix kind and layer, named after the
// Mixtral convention, w1 = gate_proj, w3 = up_proj, w2 = down_proj, in
// the service's "shared-outer" form: the factor on the hidden side is one
// matrix for all experts, the other is per expert:
//
//	mlp.experts.w1.lora_A.weight [1, r, hidden]        lora_B [experts, moe_inter, r]
//	mlp.experts.w3 likewise
//	mlp.experts.w2.lora_A.weight [experts, r, moe_inter] lora_B [1, hidden, r]
//
// Expert e's adapter of a matrix is (slice e or the shared slice of A,
// slice e or the shared slice of B): its loraPair points into the shared
// factor, so every expert reads the same memory. A factor's leading
// dimension may be 1 or the number of experts on either side, so adapters
// with both factors per expert (saved by tinker before it trained the
// shared form, or built by hand) still sample; the trainer writes and
// resumes the shared form only. The router is not adapted.

// expertLoRA is one expert's adapted matrices.
type expertLoRA struct{ gate, up, down *loraPair }

// expertKind maps a stacked tensor's name to the matrix it adapts (the
// `which` of expertModule). A switch, not a package-level map: a map is
// built by code at every start of every program linking the engine.
func expertKind(mod string) (int, bool) {
	switch mod {
	case "experts.w1":
		return 0, true
	case "experts.w3":
		return 1, true
	case "experts.w2":
		return 2, true
	}
	return 0, false
}

// sharedA reports whether the hidden-side factor of matrix which is its
// lora_A (gate and up: the hidden side is the input) rather than its
// lora_B (down: the hidden side is the output).
func sharedA(which int) bool { return which != 2 }

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

// expertFactor is one side of a stacked expert adapter: n slices of
// rows×cols (n is 1 when all experts share it).
type expertFactor struct {
	data       []float32
	n          int
	rows, cols int
}

// slice is expert e's rows×cols matrix of the factor.
func (f expertFactor) slice(e int) mat {
	if f.n == 1 {
		e = 0
	}
	sz := f.rows * f.cols
	return mat{rows: f.rows, cols: f.cols, data: f.data[e*sz : (e+1)*sz]}
}

// stackedFactor checks a stacked factor's shape [1 or experts, rows, cols].
func stackedFactor(key, half string, t *Tensor, experts, rows, cols int) (expertFactor, error) {
	if len(t.Shape) == 3 && (t.Shape[0] == 1 || t.Shape[0] == experts) && t.Shape[1] == rows && t.Shape[2] == cols &&
		len(t.Data) == t.Shape[0]*rows*cols {
		return expertFactor{data: t.Data, n: t.Shape[0], rows: rows, cols: cols}, nil
	}
	return expertFactor{}, fmt.Errorf("lora: %s %s has shape %v, want [1 or %d, %d, %d]", key, half, t.Shape, experts, rows, cols)
}

// setExperts checks layer i's expert adapter mod, a stacked pair
// ("experts.w1", ...) or one expert's ("experts.3.gate_proj", as PEFT
// names modules of transformers 4.x), and installs it per expert with B
// scaled by scale.
func (ll *loraLayer) setExperts(c Config, i int, mod string, a, b *Tensor, rank int, scale float32) error {
	which, first, n, err := expertTarget(c, mod)
	if err != nil {
		return err
	}
	if !c.IsMoELayer(i) {
		return fmt.Errorf("lora: adapter has %s for layer %d, which has no experts in this model", mod, i)
	}
	in, out := expertDims(c, which)
	key := fmt.Sprintf("%d.%s", i, mod)
	if a.Data == nil || b.Data == nil {
		return fmt.Errorf("lora: %s must be float32 tensors", key)
	}
	fa, fb, err := expertFactors(key, a, b, n, rank, in, out)
	if err != nil {
		return err
	}
	fb.data = scaled(fb.data, scale) // once, so a shared B stays shared
	if ll.experts == nil {
		ll.experts = make([]expertLoRA, c.Experts)
	}
	for k := range n {
		slot := ll.experts[first+k].slot(which)
		if *slot != nil {
			return fmt.Errorf("lora: layer %d expert %d's %s is adapted twice", i, first+k, [...]string{"gate_proj", "up_proj", "down_proj"}[which])
		}
		*slot = &loraPair{a: fa.slice(k), b: fb.slice(k)}
	}
	return nil
}

// expertTarget resolves an expert module name to the matrix it adapts and
// the experts it covers: all of them for a stacked pair, one for
// experts.N.proj.
func expertTarget(c Config, mod string) (which, first, n int, err error) {
	if which, ok := expertKind(mod); ok {
		return which, 0, c.Experts, nil
	}
	var proj string
	if _, err := fmt.Sscanf(strings.ReplaceAll(mod, ".", " "), "experts %d %s", &first, &proj); err != nil ||
		first < 0 || first >= c.Experts || !slices.Contains([]string{"gate_proj", "up_proj", "down_proj"}, proj) {
		return 0, 0, 0, fmt.Errorf("lora: unsupported target module %s (the model has %d experts)", mod, c.Experts)
	}
	return map[string]int{"gate_proj": 0, "up_proj": 1, "down_proj": 2}[proj], first, 1, nil
}

// expertFactors checks both factors of an expert module covering n
// experts: 2-D for one expert, stacked (shared or per expert) otherwise.
func expertFactors(key string, a, b *Tensor, n, rank, in, out int) (fa, fb expertFactor, err error) {
	if n == 1 {
		if !slices.Equal(a.Shape, []int{rank, in}) || len(a.Data) != rank*in {
			return fa, fb, fmt.Errorf("lora: %s lora_A has shape %v, want %v", key, a.Shape, []int{rank, in})
		}
		if !slices.Equal(b.Shape, []int{out, rank}) || len(b.Data) != out*rank {
			return fa, fb, fmt.Errorf("lora: %s lora_B has shape %v, want %v", key, b.Shape, []int{out, rank})
		}
		return expertFactor{a.Data, 1, rank, in}, expertFactor{b.Data, 1, out, rank}, nil
	}
	if fa, err = stackedFactor(key, "lora_A", a, n, rank, in); err != nil {
		return fa, fb, err
	}
	fb, err = stackedFactor(key, "lora_B", b, n, out, rank)
	return fa, fb, err
}

// scaled returns scale·x in a new slice.
func scaled(x []float32, scale float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = v * scale
	}
	return y
}
