package export

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// Reading back the target_parameters form peft_params.go writes: each
// fused parameter's factors become the per-expert modules the rest of the
// package works on (experts.N.gate_proj, up_proj, down_proj), so such an
// adapter exports and imports like any other. Only that form is read:
// gate_up_proj at rank 2r with its A stacking gate over up and its B block
// diagonal, down_proj at rank r.

// fusedParamModule matches the modules a target_parameters adapter adapts.
var fusedParamModule = lazyre.New(`^model\.layers\.(\d+)\.mlp\.experts(\.base_layer)?$`)

// paramPlan says which fused parameters the adapter targets and their
// ranks and scalings, from adapter_config.json.
type paramPlan struct {
	gateUp, down           bool
	gateUpRank, downRank   int
	gateUpScale, downScale float64
	interleaved            bool // GPT-OSS: gate on the even rows of gate_up_proj
}

// checkParamConfig accepts the target_parameters adapters tinker writes
// and refuses the rest in one line.
func checkParamConfig(cfg peft.AdapterConfig) (*paramPlan, error) {
	if len(cfg.TargetParameters) == 0 {
		if len(cfg.RankPattern) > 0 || len(cfg.AlphaPattern) > 0 {
			return nil, fmt.Errorf("%s: per-module rank_pattern/alpha_pattern cannot be exported", peft.ConfigFile)
		}
		return nil, nil
	}
	p := &paramPlan{}
	for _, t := range cfg.TargetParameters {
		switch t {
		case gateUpParam:
			p.gateUp = true
		case downParam:
			p.down = true
		default:
			return nil, fmt.Errorf("%s: target_parameters %s: tinker reads only %s and %s", peft.ConfigFile, t, gateUpParam, downParam)
		}
	}
	for k := range cfg.RankPattern {
		if k != "experts.gate_up_proj" && k != "experts.down_proj" {
			return nil, fmt.Errorf("%s: rank_pattern %s: tinker reads patterns only for its fused experts", peft.ConfigFile, k)
		}
	}
	for k := range cfg.AlphaPattern {
		if k != "experts.gate_up_proj" && k != "experts.down_proj" {
			return nil, fmt.Errorf("%s: alpha_pattern %s: tinker reads patterns only for its fused experts", peft.ConfigFile, k)
		}
	}
	p.gateUpRank, p.gateUpScale = paramScale(cfg, "experts.gate_up_proj")
	p.downRank, p.downScale = paramScale(cfg, "experts.down_proj")
	if p.gateUp && p.gateUpRank != 2*cfg.R || p.down && p.downRank != cfg.R {
		return nil, fmt.Errorf("%s: gate_up_proj has rank %d and down_proj %d; tinker reads 2·r and r (r=%d), the ranks its export writes", peft.ConfigFile, p.gateUpRank, p.downRank, cfg.R)
	}
	f, _ := models.FamilyOf(cfg.BaseModelNameOrPath)
	p.interleaved = f == models.GptOss
	return p, nil
}

// paramScale is a pattern key's rank and PEFT scaling.
func paramScale(cfg peft.AdapterConfig, key string) (int, float64) {
	r, alpha := cfg.R, cfg.LoraAlpha
	if v, ok := cfg.RankPattern[key]; ok {
		r = v
	}
	if v, ok := cfg.AlphaPattern[key]; ok {
		alpha = float64(v)
	}
	if cfg.UseRslora {
		return r, alpha / math.Sqrt(float64(r))
	}
	return r, alpha / float64(r)
}

// paramTarget names the fused parameter a module of a target_parameters
// adapter adapts: with both targeted, gate_up_proj is the inner wrapper.
func (p *paramPlan) paramTarget(path string) string {
	inner := strings.HasSuffix(path, ".base_layer")
	switch {
	case p.gateUp && p.down && inner, p.gateUp && !p.down && !inner:
		return "gate_up_proj"
	case p.down && !inner:
		return "down_proj"
	}
	return ""
}

// unfuse replaces byPath's fused-parameter modules by per-expert ones,
// their factors scaled to the adapter's own scaling scale.
func (p *paramPlan) unfuse(byPath map[string]*Module, r int, scale float32) error {
	for path, m := range byPath {
		fm := fusedParamModule.FindStringSubmatch(path)
		if fm == nil {
			continue
		}
		delete(byPath, path)
		which := p.paramTarget(path)
		if which == "" || m.A == nil || m.B == nil || len(m.A.Shape) != 2 || len(m.B.Shape) != 2 {
			return fmt.Errorf("%s: module %s is not a lora_A/lora_B pair of %s or %s", peft.WeightsFile, path, gateUpParam, downParam)
		}
		var mods []Module
		var err error
		if which == "down_proj" {
			mods, err = unfuseDown(fm[1], m, r, float32(p.downScale)/scale)
		} else {
			mods, err = unfuseGateUp(fm[1], m, r, p.interleaved, float32(p.gateUpScale)/scale)
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", peft.WeightsFile, path, err)
		}
		for i := range mods {
			if byPath[mods[i].Path] != nil {
				return fmt.Errorf("%s: expert module %s is in the adapter both fused and alone", peft.WeightsFile, mods[i].Path)
			}
			byPath[mods[i].Path] = &mods[i]
		}
	}
	return nil
}

// paramFactors reads a fused module's factors as float32 and checks that
// they hold rank·E rows and columns.
func paramFactors(m *Module, rank int) (a, b []float32, experts, in, out int, err error) {
	rE := int(m.A.Shape[0])
	if rE%rank != 0 || int(m.B.Shape[1]) != rE {
		return nil, nil, 0, 0, 0, fmt.Errorf("lora_A %v and lora_B %v are not [rank·experts, in] and [out, rank·experts] at rank %d", m.A.Shape, m.B.Shape, rank)
	}
	if a, err = m.A.Float32(); err == nil {
		b, err = m.B.Float32()
	}
	return a, b, rE / rank, int(m.A.Shape[1]), int(m.B.Shape[0]), err
}

// unfuseDown splits down_proj's rank-r factors per expert.
func unfuseDown(layer string, m *Module, r int, fix float32) ([]Module, error) {
	a, b, E, in, out, err := paramFactors(m, r)
	if err != nil {
		return nil, err
	}
	mods := make([]Module, E)
	for e := range E {
		be := make([]float32, out*r)
		for o := range out {
			for k := range r {
				be[o*r+k] = b[o*r*E+k*E+e] * fix
			}
		}
		mods[e] = expertModuleOf(layer, e, "down_proj", a[e*r*in:(e+1)*r*in], r, in, be, out)
	}
	return mods, nil
}

// unfuseGateUp splits gate_up_proj's rank-2r factors into each expert's
// gate and up modules of rank r; B must be block diagonal.
func unfuseGateUp(layer string, m *Module, r int, interleaved bool, fix float32) ([]Module, error) {
	a, b, E, in, out, err := paramFactors(m, 2*r)
	if err != nil {
		return nil, err
	}
	if out%2 != 0 {
		return nil, fmt.Errorf("lora_B has %d rows, not gate's and up's", out)
	}
	I, R := out/2, 2*r
	mods := make([]Module, 0, 2*E)
	for e := range E {
		gb, ub := make([]float32, I*r), make([]float32, I*r)
		for o := range out {
			isGate, j := o < I, o%I
			if interleaved {
				isGate, j = o%2 == 0, o/2
			}
			for k := range R {
				v := b[o*R*E+k*E+e]
				switch {
				case isGate && k < r:
					gb[j*r+k] = v * fix
				case !isGate && k >= r:
					ub[j*r+k-r] = v * fix
				case v != 0:
					return nil, fmt.Errorf("expert %d's lora_B mixes gate and up (row %d, column %d): only the block-diagonal form tinker writes is read", e, o, k)
				}
			}
		}
		ga, ua := a[e*R*in:(e*R+r)*in], a[(e*R+r)*in:(e+1)*R*in]
		mods = append(mods, expertModuleOf(layer, e, "gate_proj", ga, r, in, gb, I), expertModuleOf(layer, e, "up_proj", ua, r, in, ub, I))
	}
	return mods, nil
}

// expertModuleOf makes expert e's module from float32 factors.
func expertModuleOf(layer string, e int, proj string, a []float32, r, in int, b []float32, out int) Module {
	path := fmt.Sprintf("model.layers.%s.mlp.experts.%d.%s", layer, e, proj)
	return Module{Path: path, A: f32Tensor(path+".lora_A", []int64{int64(r), int64(in)}, a), B: f32Tensor(path+".lora_B", []int64{int64(out), int64(r)}, b)}
}

// f32Tensor wraps float32 values as a safetensors F32 tensor.
func f32Tensor(name string, shape []int64, vals []float32) *safetensors.Tensor {
	data, _ := safetensors.EncodeFloat32(safetensors.F32, vals) // F32 always encodes
	return &safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: slices.Clone(shape), Data: data}
}
