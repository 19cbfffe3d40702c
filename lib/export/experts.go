package export

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// Qwen3-MoE expert adapters. Tinker (and the local server) store one
// stacked pair per layer and matrix kind, named after Mixtral: mlp.experts.w1
// (gate_proj), w3 (up_proj) and w2 (down_proj), lora_A [experts, r, in] and
// lora_B [experts, out, r] except the hidden-side factor, which both the
// service and the local server share across experts (lora_A [1, r, hidden]
// of w1/w3, lora_B [1, hidden, r] of w2); adapters with both factors per
// expert read as well. Reading an adapter (expandExperts) splits them into one module
// per expert under transformers 4.x's names (mlp.experts.{e}.gate_proj),
// which is how the Hub's checkpoints store the experts and how PEFT names
// the modules it adapts there; such a per-expert PEFT adapter reads as
// well. Merging into a base saved by transformers 5.x, whose experts are
// fused (mlp.experts.gate_up_proj [experts, 2·inter, hidden], each
// expert's gate rows then its up rows, and mlp.experts.down_proj
// [experts, hidden, inter]), gathers the experts' updates back into one
// update of each fused tensor. The router (mlp.gate) is never adapted.

var (
	// expertModule is one expert's module: layer, expert, projection.
	expertModule = lazyre.New(`^model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)$`)
	// layerPrefix finds any module's layer number.
	layerPrefix = lazyre.New(`^model\.layers\.(\d+)\.`)
)

// isExpertPath reports whether path is an expert module the export handles.
func isExpertPath(path string) bool {
	return latentStacked.MatchString(path) || expertModule.MatchString(path)
}

// expertSlice is expert e's [rows, cols] slice of a stacked tensor.
func expertSlice(t *safetensors.Tensor, e int64) *safetensors.Tensor {
	n := int64(len(t.Data)) / t.Shape[0]
	return &safetensors.Tensor{Name: fmt.Sprintf("%s[%d]", t.Name, e), DType: t.DType, Shape: t.Shape[1:], Data: t.Data[e*n : (e+1)*n]}
}

// StackExperts returns mods with each layer's per-expert modules gathered
// into the stacked float32 w1/w2/w3 modules the local server trains
// (import-adapter), in the service's shared-outer form: the hidden-side
// factor (w1's and w3's lora_A, w2's lora_B) is one [1, ...] slice, which
// the experts' modules must then all have alike. Every expert of a layer
// and kind must be present.
func StackExperts(mods []Module) ([]Module, error) {
	groups := map[string][]Module{}
	var out []Module
	for _, m := range mods {
		em := expertModule.FindStringSubmatch(m.Path)
		if em == nil {
			out = append(out, m)
			continue
		}
		for _, p := range stackedProj {
			if p.proj == em[3] {
				key := "model.layers." + em[1] + ".mlp.experts." + p.w
				groups[key] = append(groups[key], m)
			}
		}
	}
	for path, ms := range groups {
		s, err := stack(path, ms)
		if err == nil {
			err = shareHiddenSide(&s)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return moduleLess(out[i].Path, out[j].Path) })
	return out, nil
}

// stack builds one stacked module from its experts' modules.
func stack(path string, ms []Module) (Module, error) {
	sort.Slice(ms, func(i, j int) bool { return expertIndex(ms[i].Path) < expertIndex(ms[j].Path) })
	for e, m := range ms {
		if expertIndex(m.Path) != e {
			return Module{}, fmt.Errorf("adapter has %d experts' modules for %s but not expert %d's", len(ms), path, e)
		}
	}
	a, err := stackHalf(path+".lora_A", ms, func(m Module) *safetensors.Tensor { return m.A })
	if err != nil {
		return Module{}, err
	}
	b, err := stackHalf(path+".lora_B", ms, func(m Module) *safetensors.Tensor { return m.B })
	return Module{Path: path, A: a, B: b}, err
}

// shareHiddenSide cuts a stacked module's hidden-side factor to its one
// shared slice, or says why it cannot: an adapter trained with its own
// hidden-side factor per expert has no exact shared-outer form.
func shareHiddenSide(m *Module) error {
	t, half := m.A, "lora_A"
	if strings.HasSuffix(m.Path, ".w2") {
		t, half = m.B, "lora_B"
	}
	n := int64(len(t.Data)) / t.Shape[0]
	for e := int64(1); e < t.Shape[0]; e++ {
		if string(t.Data[e*n:(e+1)*n]) != string(t.Data[:n]) {
			return fmt.Errorf("adapter module %s: expert %d's %s differs from expert 0's; the local server trains the service's form, one %s shared by all experts, so an adapter with one per expert cannot be imported", m.Path, e, half, half)
		}
	}
	*t = safetensors.Tensor{Name: t.Name, DType: t.DType, Shape: append([]int64{1}, t.Shape[1:]...), Data: t.Data[:n]}
	return nil
}

func expertIndex(path string) int {
	n, _ := strconv.Atoi(expertModule.FindStringSubmatch(path)[2])
	return n
}

func stackHalf(name string, ms []Module, half func(Module) *safetensors.Tensor) (*safetensors.Tensor, error) {
	first := half(ms[0])
	shape := append([]int64{int64(len(ms))}, first.Shape...)
	data := make([]byte, 0, int64(len(ms))*first.NumElements()*4)
	for _, m := range ms {
		t := half(m)
		if fmt.Sprint(t.Shape) != fmt.Sprint(first.Shape) {
			return nil, fmt.Errorf("%s: expert modules have shapes %v and %v", name, first.Shape, t.Shape)
		}
		vals, err := t.Float32()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, v := range vals {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
		}
	}
	return &safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: data}, nil
}

// fuseExperts takes the expert modules whose base tensors are fused
// (transformers 5.x) out of mods and returns the rest with one update per
// fused tensor, keyed by its name.
func fuseExperts(c engine.Config, mods []Module, infos map[string]safetensors.TensorInfo, scale float32) ([]Module, map[string]*update, error) {
	type key struct {
		layer string
		e     int
		proj  string
	}
	byKey := map[key]Module{}
	var rest []Module
	for _, m := range mods {
		em := expertModule.FindStringSubmatch(m.Path)
		if em == nil {
			rest = append(rest, m)
			continue
		}
		if _, fused := infos[fusedName(em[1], em[3])]; !fused {
			rest = append(rest, m)
			continue
		}
		e, _ := strconv.Atoi(em[2])
		byKey[key{em[1], e, em[3]}] = m
	}
	ups := map[string]*update{}
	for k := range byKey {
		name := fusedName(k.layer, k.proj)
		if ups[name] != nil {
			continue
		}
		projs := []string{"down_proj"}
		if k.proj != "down_proj" {
			projs = []string{"gate_proj", "up_proj"}
		}
		get := func(e int, proj string) (Module, bool) {
			m, ok := byKey[key{k.layer, e, proj}]
			return m, ok
		}
		var u *update
		var err error
		if c.Family == models.GptOss {
			u, err = gptOssFusedUpdate(name, infos[name], c.Experts, get, scale)
		} else {
			u, err = fusedUpdate(name, infos[name], projs, get, scale)
		}
		if err != nil {
			return nil, nil, err
		}
		ups[name] = u
	}
	return rest, ups, nil
}

// fusedName is the fused base tensor holding a layer's projection proj.
func fusedName(layer, proj string) string {
	if proj == "down_proj" {
		return "model.layers." + layer + ".mlp.experts.down_proj"
	}
	return "model.layers." + layer + ".mlp.experts.gate_up_proj"
}

// fusedUpdate builds the update of fused tensor t ([experts, rows, in]):
// per expert, the blocks of projs in order (gate then up, or down), each
// with its own A; an expert the adapter leaves alone gets zeros.
func fusedUpdate(name string, t safetensors.TensorInfo, projs []string, get func(int, string) (Module, bool), scale float32) (*update, error) {
	if len(t.Shape) != 3 || !isFloat(t.DType) || t.Shape[1]%int64(len(projs)) != 0 {
		return nil, fmt.Errorf("base tensor %s is %s %v, want a 3-D float tensor", name, t.DType, t.Shape)
	}
	experts, block, in := int(t.Shape[0]), int(t.Shape[1])/len(projs), int(t.Shape[2])
	var u *update
	for e := range experts {
		for _, proj := range projs {
			m, ok := get(e, proj)
			if !ok {
				if u != nil {
					u.a, u.b = append(u.a, make([]float32, u.r*in)...), append(u.b, make([]float32, block*u.r)...)
				}
				continue
			}
			if int(m.B.Shape[0]) != block || int(m.A.Shape[1]) != in {
				return nil, fmt.Errorf("adapter module %s updates a [%d %d] matrix, the base's %s holds [%d %d] blocks", m.Path, m.B.Shape[0], m.A.Shape[1], name, block, in)
			}
			one, err := newUpdate(m, scale)
			if err != nil {
				return nil, err
			}
			if u == nil { // the blocks before this one are zero
				done := e*len(projs) + indexOf(projs, proj)
				u = &update{r: one.r, in: in, out: experts * int(t.Shape[1]), rowsPerA: block,
					a: make([]float32, done*one.r*in), b: make([]float32, done*block*one.r)}
			}
			if one.r != u.r {
				return nil, fmt.Errorf("adapter module %s has rank %d, the others %d", m.Path, one.r, u.r)
			}
			u.a, u.b = append(u.a, one.a...), append(u.b, one.b...)
		}
	}
	return u, nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}
