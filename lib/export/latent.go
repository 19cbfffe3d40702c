package export

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// isLatent reports whether an export is of the DeepSeek-V3 family, from
// the checkpoint's base model, else the base directory's model_type.
func isLatent(o Options) bool {
	name := o.BaseModel
	if name == "" {
		if c, err := readAdapterConfig(o.Adapter); err == nil {
			name = c.BaseModelNameOrPath
		}
	}
	if f, ok := models.FamilyOf(name); ok {
		return f == models.DeepSeekV3
	}
	return o.Base != "" && latentModelType(readModelType(o.Base))
}

// exportLatent is Export for DeepSeek V3.1 / Kimi K2.
func exportLatent(ctx context.Context, o Options, dt safetensors.DType) (*Result, error) {
	a, err := ReadLatentAdapter(o.Adapter)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	o.fillFrom(a)
	return o.byFormat(func() (*Result, error) { return exportLatentMerged(ctx, o, a, dt) },
		func() (*Result, error) {
			if o.Experts == ExpertsFused {
				return nil, fmt.Errorf("DeepSeek V3.1 / Kimi K2 experts are written per expert only (their checkpoints keep them so): drop --experts fused")
			}
			note := LatentServeWarning
			if kimiK25(o) {
				prefixModules(a)
				note = KimiK25ServeWarning
			}
			return writePEFT(ctx, o, a, dt, []string{note})
		})
}

// kimiK25 reports whether the base keeps its text model under
// language_model. (Kimi K2.5, K2.6: model_type kimi_k25).
func kimiK25(o Options) bool {
	if o.Base != "" {
		return readModelType(o.Base) == "kimi_k25"
	}
	n := strings.ToLower(o.BaseModel)
	return strings.Contains(n, "kimi-k2.5") || strings.Contains(n, "kimi-k2.6")
}

func prefixModules(a *Adapter) {
	for i := range a.Modules {
		a.Modules[i].Path = kimiPrefix + a.Modules[i].Path
	}
}

func exportLatentMerged(ctx context.Context, o Options, a *Adapter, dt safetensors.DType) (*Result, error) {
	tmp, cleanup, err := tempRoot()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	dir, err := latentBaseDir(o, tmp)
	if err != nil {
		return nil, err
	}
	if err := CheckInputs(o.Out, dir); err != nil {
		return nil, err
	}
	lb, err := openLatentBase(dir)
	if err != nil {
		return nil, err
	}
	m, need, err := newLatentMerger(lb, a, dt)
	if err != nil {
		return nil, err
	}
	files, err := sideFiles(dir)
	if err != nil {
		return nil, err
	}
	res := &Result{Out: o.Out, Format: Merged, BaseModel: o.BaseModel, BaseDir: dir, Modules: len(a.Modules)}
	err = withOut(o, need+filesSize(dir, files), func(out *outDir) error {
		for _, s := range lb.Shards {
			if err := out.write(s, func(w io.Writer) error { return m.shard(ctx, s, w) }); err != nil {
				return err
			}
		}
		return m.writeSide(out, o, a, files, res)
	})
	if err != nil {
		return nil, err
	}
	res.Files = len(lb.Shards) + len(files) + 3
	return res, nil
}

// latentBaseDir is --base, else the base model in the Hugging Face cache,
// else (tinker-local/tiny-deepseek) a generated copy under tmp.
func latentBaseDir(o Options, tmp string) (string, error) {
	if o.Base != "" {
		return o.Base, nil
	}
	if o.BaseModel == "" {
		return "", fmt.Errorf("the adapter does not name its base model: pass --base DIR (a Hugging Face model directory)")
	}
	if d, err := engine.FindModelDir(o.BaseModel); err == nil {
		return d, nil
	}
	if models.IsTiny(o.BaseModel) {
		return writeTinyBase(o.BaseModel, tmp)
	}
	return "", fmt.Errorf("base model %s is not in the Hugging Face cache (%s): download it with `hf download %s`, or pass --base DIR",
		o.BaseModel, strings.Join(engine.HFCacheDirs(), ", "), o.BaseModel)
}

// writeSide writes the index, config.json (without quantization_config
// when dequantised), the copied files and the model card.
func (m *latentMerger) writeSide(out *outDir, o Options, a *Adapter, files []string, res *Result) error {
	idx, err := m.indexJSON()
	if err != nil {
		return err
	}
	cfg, err := mergedConfig(m.lb.Dir, false, m.dtype, m.dequant)
	if err != nil {
		return err
	}
	card := mergedCard(o, a, m.merger)
	if !m.dequant && (m.lb.quant != quant.Scheme{}) {
		card = append(card, "- quantised weights that the adapter changes are requantised in the base's format with fresh scales; the others are copied as they are\n"...)
	}
	writes := []struct {
		name string
		w    func(io.Writer) error
	}{{indexFile, writeBytes(idx)}, {"config.json", writeBytes(cfg)}, {"README.md", writeBytes(card)}}
	for _, f := range files {
		writes = append(writes, struct {
			name string
			w    func(io.Writer) error
		}{f, copyFrom(filepath.Join(m.lb.Dir, f))})
	}
	for _, w := range writes {
		if err := out.write(w.name, w.w); err != nil {
			return err
		}
	}
	res.Bytes = out.written
	return nil
}
