package export

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// PEFT export for fused experts. transformers 5.x keeps a layer's experts
// in two 3-D parameters, mlp.experts.gate_up_proj and mlp.experts.down_proj
// (GPT-OSS always; Qwen3-MoE in a directory 5.x saved), which PEFT's
// target_modules cannot name. PEFT adapts such parameters with
// LoraConfig.target_parameters (peft/tuners/lora/layer.py, ParamWrapper):
//
//   - a 3-D parameter [E, d1, d2] is read as [E, out, in] unless the
//     experts module sets is_transposed (GPT-OSS: [E, in, out]); in both,
//     in is the hidden side of gate_up_proj and out its 2·moe_inter;
//   - lora_A is [r·E, in], row e·r+k expert e's row k; lora_B is
//     [out, r·E], column k·E+e expert e's column k (PEFT reshapes A to
//     [E, r, in] and B to [out, r, E]); the update of expert e is
//     scaling·B_e·A_e with scaling = alpha/r of that parameter;
//   - two parameters of one module nest their wrappers in the order the
//     module registers them: gate_up_proj inside, saved as
//     mlp.experts.base_layer.lora_{A,B}.weight, down_proj outside, saved as
//     mlp.experts.lora_{A,B}.weight.
//
// gate_proj and up_proj are two rank-r adapters here but gate_up_proj is one
// parameter, so it takes rank 2r (rank_pattern): A_e stacks gate's A over
// up's, B_e is block diagonal, gate's B on the gate rows (the first half,
// or GPT-OSS's even rows) and up's on the others; alpha_pattern keeps its
// scaling that of the rest. The shared hidden-side factor is written once
// per expert, as PEFT has no shared form.

// Parameter names in target_parameters and rank_pattern.
const (
	gateUpParam = "mlp.experts.gate_up_proj"
	downParam   = "mlp.experts.down_proj"
)

// fusedExpertBase matches a base's fused expert parameter (5.x layout).
var fusedExpertBase = lazyre.New(`^model\.layers\.\d+\.mlp\.experts\.gate_up_proj$`)

// genTensor is an output tensor computed one row at a time.
type genTensor struct {
	shape []int64 // [rows, cols]
	row   func(i int, dst []float32)
}

// write encodes the tensor's rows in dtype dt to w.
func (g genTensor) write(w io.Writer, dt safetensors.DType) error {
	vals := make([]float32, g.shape[1])
	buf := make([]byte, len(vals)*dt.Size())
	for i := range int(g.shape[0]) {
		clear(vals)
		g.row(i, vals)
		encodeRow(dt, vals, buf)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// expertHalves are one layer's expert adapters of one projection, float32,
// indexed by expert: A [r, in], B [out, r].
type expertHalves struct {
	a, b    [][]float32
	in, out int
}

// fusedLayer is one layer's expert modules by projection.
type fusedLayer map[string][]Module

// fusedExpertsPEFT splits a's modules into the other modules and, per
// layer, the expert modules by projection; every expert of a projection
// must be present.
func fusedExpertsPEFT(a *Adapter) (rest []Module, layers map[int]fusedLayer, err error) {
	layers = map[int]fusedLayer{}
	for _, m := range a.Modules {
		em := expertModule.FindStringSubmatch(m.Path)
		if em == nil {
			rest = append(rest, m)
			continue
		}
		l, _ := strconv.Atoi(em[1])
		if layers[l] == nil {
			layers[l] = fusedLayer{}
		}
		layers[l][em[3]] = append(layers[l][em[3]], m)
	}
	for l, fl := range layers {
		for proj, ms := range fl {
			sort.Slice(ms, func(i, j int) bool { return expertIndex(ms[i].Path) < expertIndex(ms[j].Path) })
			for e, m := range ms {
				if expertIndex(m.Path) != e {
					return nil, nil, fmt.Errorf("layer %d: the adapter has %d experts' %s but not expert %d's: a fused parameter's adapter needs every expert", l, len(ms), proj, e)
				}
			}
		}
		if n := len(fl["gate_proj"]); n != len(fl["up_proj"]) || (len(fl["down_proj"]) != 0 && n != 0 && n != len(fl["down_proj"])) {
			return nil, nil, fmt.Errorf("layer %d: the adapter's experts adapt gate_proj, up_proj and down_proj unevenly (%d, %d, %d): gate_up_proj's adapter needs both halves", l, n, len(fl["up_proj"]), len(fl["down_proj"]))
		}
	}
	return rest, layers, nil
}

// halves reads the float32 factors of an expert projection's modules.
func halves(ms []Module) (expertHalves, error) {
	h := expertHalves{a: make([][]float32, len(ms)), b: make([][]float32, len(ms))}
	for e, m := range ms {
		var err error
		if h.a[e], err = m.A.Float32(); err == nil {
			h.b[e], err = m.B.Float32()
		}
		if err != nil {
			return h, fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	h.in, h.out = int(ms[0].A.Shape[1]), int(ms[0].B.Shape[0])
	return h, nil
}

// gateUpTensors are gate_up_proj's lora_A [2r·E, hidden] and lora_B
// [2·inter, 2r·E]; interleaved puts gate on the even rows (GPT-OSS).
// fix scales B from the adapter's scaling to the rank-2r one.
func gateUpTensors(gate, up expertHalves, r int, interleaved bool, fix float32) (a, b genTensor) {
	E, R, I := len(gate.a), 2*r, gate.out
	a = genTensor{shape: []int64{int64(R * E), int64(gate.in)}, row: func(i int, dst []float32) {
		e, k := i/R, i%R
		src := gate.a[e]
		if k >= r {
			src, k = up.a[e], k-r
		}
		copy(dst, src[k*gate.in:(k+1)*gate.in])
	}}
	b = genTensor{shape: []int64{int64(2 * I), int64(R * E)}, row: func(o int, dst []float32) {
		isGate, j := o < I, o%I
		if interleaved {
			isGate, j = o%2 == 0, o/2
		}
		src, k0 := up.b, r
		if isGate {
			src, k0 = gate.b, 0
		}
		for k := range r {
			for e := range E {
				dst[(k0+k)*E+e] = src[e][j*r+k] * fix
			}
		}
	}}
	return a, b
}

// downTensors are down_proj's lora_A [r·E, inter] and lora_B [hidden, r·E].
func downTensors(d expertHalves, r int) (a, b genTensor) {
	E := len(d.a)
	a = genTensor{shape: []int64{int64(r * E), int64(d.in)}, row: func(i int, dst []float32) {
		e, k := i/r, i%r
		copy(dst, d.a[e][k*d.in:(k+1)*d.in])
	}}
	b = genTensor{shape: []int64{int64(d.out), int64(r * E)}, row: func(o int, dst []float32) {
		for k := range r {
			for e := range E {
				dst[k*E+e] = d.b[e][o*r+k]
			}
		}
	}}
	return a, b
}

// gateUpAlpha is gate_up_proj's alpha_pattern value and the factor that
// takes B from the adapter's scaling to PEFT's at rank 2r with it.
func gateUpAlpha(a *Adapter) (alpha int, fix float32) {
	alpha = max(1, int(math.Round(2*a.Config.LoraAlpha)))
	theirs := float64(alpha) / float64(2*a.Config.R)
	if a.Config.UseRslora {
		theirs = float64(alpha) / math.Sqrt(float64(2*a.Config.R))
	}
	return alpha, float32(float64(a.Scale) / theirs)
}

// fusedPEFTTensors names and builds every layer's fused expert tensors.
func fusedPEFTTensors(a *Adapter, layers map[int]fusedLayer, interleaved bool) (map[string]genTensor, error) {
	out := map[string]genTensor{}
	r := a.Config.R
	_, fix := gateUpAlpha(a)
	for l, fl := range layers {
		p := fmt.Sprintf("base_model.model.model.layers.%d.mlp.experts.", l)
		inner := ""
		if len(fl["down_proj"]) > 0 {
			inner = "base_layer." // down_proj's wrapper holds gate_up_proj's
			d, err := halves(fl["down_proj"])
			if err != nil {
				return nil, err
			}
			out[p+"lora_A.weight"], out[p+"lora_B.weight"] = downTensors(d, r)
		}
		if len(fl["gate_proj"]) > 0 {
			g, err := halves(fl["gate_proj"])
			if err != nil {
				return nil, err
			}
			u, err := halves(fl["up_proj"])
			if err != nil {
				return nil, err
			}
			out[p+inner+"lora_A.weight"], out[p+inner+"lora_B.weight"] = gateUpTensors(g, u, r, interleaved, fix)
		}
	}
	return out, nil
}

// fusedTargets are target_parameters, rank_pattern and alpha_pattern of
// a fused export (gate_up_proj listed first: PEFT nests it inside).
func fusedTargets(a *Adapter, layers map[int]fusedLayer) (params []string, ranks, alphas map[string]int) {
	var gateUp, down bool
	for _, fl := range layers {
		gateUp, down = gateUp || len(fl["gate_proj"]) > 0, down || len(fl["down_proj"]) > 0
	}
	ranks, alphas = map[string]int{}, map[string]int{}
	if gateUp {
		params = append(params, gateUpParam)
		alpha, _ := gateUpAlpha(a)
		ranks["experts.gate_up_proj"], alphas["experts.gate_up_proj"] = 2*a.Config.R, alpha
	}
	if down {
		params = append(params, downParam)
	}
	return params, ranks, alphas
}

// fusedPEFT reports whether a PEFT export writes a's experts fused
// (target_parameters) and whether the model is GPT-OSS (whose fused
// experts interleave gate and up). --experts decides when given; else
// GPT-OSS's are fused, as transformers and vLLM hold them, and
// Qwen3-MoE's when --base names a directory whose experts are fused
// (transformers 5.x), per expert otherwise.
func fusedPEFT(o Options, a *Adapter) (fused, gptOss bool, err error) {
	f, _ := models.FamilyOf(o.BaseModel)
	gptOss = f == models.GptOss
	switch {
	case !hasExperts(a) || o.Experts == ExpertsPerExpert:
		return false, gptOss, nil
	case gptOss || o.Experts == ExpertsFused:
		return true, gptOss, nil
	case o.Base == "":
		return false, false, nil
	}
	b, err := OpenBase(o.Base)
	if err != nil {
		return false, false, err
	}
	infos, err := scanShards(b)
	if err != nil {
		return false, false, err
	}
	for name := range infos {
		if fusedExpertBase.MatchString(name) {
			return true, false, nil
		}
	}
	return false, false, nil
}
