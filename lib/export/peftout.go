package export

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// UnembedWarning is shown when a PEFT export adapts the unembedding.
const UnembedWarning = "the adapter trains the unembedding (lm_head): vLLM does not load LoRA on lm_head; " +
	"export with --format merged (format=\"merged\") to serve it there"

// exportPEFT writes the adapter in PEFT's layout under Hugging Face names.
func exportPEFT(ctx context.Context, o Options, a *Adapter, dt safetensors.DType) (*Result, error) {
	if o.BaseModel != "" {
		if err := CheckGQAFamily(o.BaseModel, "exported"); err != nil {
			return nil, err
		}
		if f, _ := models.FamilyOf(o.BaseModel); f == models.GptOss && hasExperts(a) {
			return nil, errors.New(GptOssPEFTError)
		}
	}
	return writePEFT(ctx, o, a, dt, nil)
}

// writePEFT writes a's modules as a PEFT adapter; warnings go into the
// result (after the unembedding's, when it is adapted).
func writePEFT(ctx context.Context, o Options, a *Adapter, dt safetensors.DType, warnings []string) (*Result, error) {
	cfg, err := peftConfig(o, a)
	if err != nil {
		return nil, err
	}
	layout, srcs, err := peftLayout(a, dt)
	if err != nil {
		return nil, err
	}
	res := &Result{Out: o.Out, Format: PEFT, BaseModel: o.BaseModel, Modules: len(a.Modules), Files: 3}
	if a.Has("lm_head") || a.Has(kimiPrefix+"lm_head") {
		res.Warnings = append(res.Warnings, UnembedWarning)
	}
	res.Warnings = append(res.Warnings, warnings...)
	err = withOut(o, layout.Size()+1<<20, func(out *outDir) error {
		if err := out.write(peft.ConfigFile, writeBytes(cfg)); err != nil {
			return err
		}
		weights := func(w io.Writer) error {
			_, err := layout.WriteTo(w, func(_ int, t safetensors.TensorInfo, w io.Writer) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				return writeConverted(srcs[t.Name], t.DType, w)
			})
			return err
		}
		if err := out.write(peft.WeightsFile, weights); err != nil {
			return err
		}
		if err := out.write("README.md", writeBytes(peftCard(o, a))); err != nil {
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
func peftConfig(o Options, a *Adapter) ([]byte, error) {
	c := a.Config
	ac := peft.AdapterConfig{AlphaPattern: map[string]int{}, BaseModelNameOrPath: o.BaseModel, Bias: "none",
		InferenceMode: true, InitLoraWeights: true, LoraAlpha: c.LoraAlpha, LoraDropout: c.LoraDropout, PeftType: "LORA",
		R: c.R, RankPattern: map[string]int{}, TargetModules: a.Targets(), TaskType: "CAUSAL_LM", UseRslora: c.UseRslora}
	b, err := json.MarshalIndent(ac, "", "  ")
	return append(b, '\n'), err
}

// peftLayout names every tensor base_model.model.<module>.lora_A/B.weight.
func peftLayout(a *Adapter, dt safetensors.DType) (*safetensors.Layout, map[string]*safetensors.Tensor, error) {
	var infos []safetensors.TensorInfo
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
