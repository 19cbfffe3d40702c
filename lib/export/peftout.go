package export

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// exportPEFT writes the adapter in PEFT's layout under Hugging Face names.
func exportPEFT(ctx context.Context, o Options, a *Adapter, dt safetensors.DType) (*Result, error) {
	if o.BaseModel != "" {
		if err := CheckGQAFamily(o.BaseModel, "exported"); err != nil {
			return nil, err
		}
	}
	fused, gptOss, err := fusedPEFT(o, a)
	if err != nil || !fused {
		if err != nil {
			return nil, err
		}
		return writePEFT(ctx, o, a, dt, expertWarnings(a, gptOss, false))
	}
	rest, layers, err := fusedExpertsPEFT(a)
	if err != nil {
		return nil, err
	}
	gen, err := fusedPEFTTensors(a, layers, gptOss)
	if err != nil {
		return nil, err
	}
	fa := *a
	fa.Modules = rest
	return writePEFTWith(ctx, o, &fa, dt, expertWarnings(a, gptOss, true), fusedOut{gen: gen, layers: layers, modules: len(a.Modules)})
}

// card is the model card's line on the fused experts ("" without).
func (fo fusedOut) card(a *Adapter) string {
	if fo.gen == nil {
		return ""
	}
	params, _, _ := fusedTargets(a, fo.layers)
	return fmt.Sprintf("- experts: target_parameters %s (gate_up_proj at r=%d: gate's and up's adapters side by side), %d matrices; PEFT 0.19.1 or later reads them\n",
		strings.Join(params, ", "), 2*a.Config.R, fo.modules-len(a.Modules))
}

// fusedOut is what a fused export adds to the PEFT output: the experts'
// generated tensors and their target_parameters.
type fusedOut struct {
	gen     map[string]genTensor
	layers  map[int]fusedLayer
	modules int // adapted matrices, experts included
}

// writePEFT writes a's modules as a PEFT adapter; warnings go into the
// result (after the unembedding's, when it is adapted).
func writePEFT(ctx context.Context, o Options, a *Adapter, dt safetensors.DType, warnings []string) (*Result, error) {
	return writePEFTWith(ctx, o, a, dt, warnings, fusedOut{modules: len(a.Modules)})
}

// writePEFTWith is writePEFT with fused expert parameters (fo.gen) beside
// a's modules.
func writePEFTWith(ctx context.Context, o Options, a *Adapter, dt safetensors.DType, warnings []string, fo fusedOut) (*Result, error) {
	cfg, err := peftConfig(o, a, fo)
	if err != nil {
		return nil, err
	}
	layout, srcs, err := peftLayout(a, dt, fo.gen)
	if err != nil {
		return nil, err
	}
	res := &Result{Out: o.Out, Format: PEFT, BaseModel: o.BaseModel, Modules: fo.modules, Files: 3}
	family, _ := models.FamilyOf(o.BaseModel)
	res.Warnings = append(unembedWarnings(a, family), warnings...)
	err = withOut(o, layout.Size()+1<<20, func(out *outDir) error {
		if err := out.write(peft.ConfigFile, writeBytes(cfg)); err != nil {
			return err
		}
		weights := func(w io.Writer) error {
			_, err := layout.WriteTo(w, func(_ int, t safetensors.TensorInfo, w io.Writer) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				if g, ok := fo.gen[t.Name]; ok {
					return g.write(w, t.DType)
				}
				return writeConverted(srcs[t.Name], t.DType, w)
			})
			return err
		}
		if err := out.write(peft.WeightsFile, weights); err != nil {
			return err
		}
		if err := out.write("README.md", writeBytes(append(peftCard(o, a), fo.card(a)...))); err != nil {
			return err
		}
		res.Bytes = out.written
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// peftConfig is adapter_config.json: PEFT's LoraConfig fields.
func peftConfig(o Options, a *Adapter, fo fusedOut) ([]byte, error) {
	c := a.Config
	ac := peft.AdapterConfig{AlphaPattern: map[string]int{}, BaseModelNameOrPath: o.BaseModel, Bias: "none",
		InferenceMode: true, InitLoraWeights: true, LoraAlpha: c.LoraAlpha, LoraDropout: c.LoraDropout, PeftType: "LORA",
		R: c.R, RankPattern: map[string]int{}, TargetModules: a.Targets(), TaskType: "CAUSAL_LM", UseRslora: c.UseRslora}
	if fo.gen != nil {
		ac.TargetParameters, ac.RankPattern, ac.AlphaPattern = fusedTargets(a, fo.layers)
		if ac.TargetModules == nil {
			ac.TargetModules = []string{} // PEFT: target no module, only the parameters
		}
	}
	b, err := json.MarshalIndent(ac, "", "  ")
	return append(b, '\n'), err
}

// peftLayout names every tensor base_model.model.<module>.lora_A/B.weight,
// then the generated ones (gen, F32 unless dt says otherwise).
func peftLayout(a *Adapter, dt safetensors.DType, gen map[string]genTensor) (*safetensors.Layout, map[string]*safetensors.Tensor, error) {
	var infos []safetensors.TensorInfo
	for _, name := range slices.Sorted(maps.Keys(gen)) {
		out := safetensors.F32
		if dt != "" {
			out = dt
		}
		infos = append(infos, safetensors.TensorInfo{Name: name, DType: out, Shape: gen[name].shape})
	}
	srcs := map[string]*safetensors.Tensor{}
	for _, m := range a.Modules {
		for half, t := range map[string]*safetensors.Tensor{"lora_A": m.A, "lora_B": m.B} {
			name := "base_model.model." + m.Path + "." + half + ".weight"
			out := t.DType
			if dt != "" {
				out = dt
			}
			infos = append(infos, safetensors.TensorInfo{Name: name, DType: out, Shape: t.Shape})
			srcs[name] = t
		}
	}
	l, err := safetensors.NewLayout(infos, map[string]string{"format": "pt"})
	return l, srcs, err
}

// writeConverted writes t's values in dtype dt.
func writeConverted(t *safetensors.Tensor, dt safetensors.DType, w io.Writer) error {
	if t.DType == dt {
		_, err := w.Write(t.Data)
		return err
	}
	vals, err := t.Float32()
	if err != nil {
		return err
	}
	b := make([]byte, len(vals)*dt.Size())
	encodeRow(dt, vals, b)
	_, err = w.Write(b)
	return err
}
