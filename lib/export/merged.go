package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/userfile"
)

// exportMerged writes a Hugging Face model directory with the adapter
// merged into the base weights.
func exportMerged(ctx context.Context, o Options, a *Adapter, dt safetensors.DType) (*Result, error) {
	tmp, cleanup, err := tempRoot()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	base, err := checkedBase(o, a, tmp)
	if err != nil {
		return nil, err
	}
	if err := CheckInputs(o.Out, base.Dir); err != nil { // a base found in the Hugging Face cache
		return nil, err
	}
	m, need, err := newMerger(base, a, dt)
	if err != nil {
		return nil, err
	}
	files, err := sideFiles(base.Dir)
	if err != nil {
		return nil, err
	}
	res := &Result{Out: o.Out, Format: Merged, BaseModel: o.BaseModel, BaseDir: base.Dir, Modules: len(a.Modules), Untied: m.untie}
	err = withOut(o, need+filesSize(base.Dir, files), func(out *outDir) error {
		for _, s := range base.Shards {
			if err := out.write(s, func(w io.Writer) error { return m.shard(ctx, s, w) }); err != nil {
				return err
			}
		}
		return writeMergedSide(out, o, a, m, files, res)
	})
	if err != nil {
		return nil, err
	}
	res.Files = len(base.Shards) + len(files) + 2
	return res, nil
}

// checkedBase finds and opens the base, and checks that it is the model
// the checkpoint was trained on and has every module the adapter adapts.
func checkedBase(o Options, a *Adapter, tmp string) (*Base, error) {
	dir, err := FindBase(o.Base, o.BaseModel, tmp)
	if err != nil {
		return nil, err
	}
	base, err := OpenBase(dir)
	if err != nil {
		return nil, err
	}
	if err := CheckMatch(o.BaseModel, base); err != nil {
		return nil, err
	}
	if err := a.Check(base.Config); err != nil {
		return nil, err
	}
	return base, nil
}

// writeMergedSide writes everything but the shards: the index, config.json
// (untied or retyped when needed), the copied files and the model card.
func writeMergedSide(out *outDir, o Options, a *Adapter, m *merger, files []string, res *Result) error {
	idx, err := m.indexJSON()
	if err != nil {
		return err
	}
	if err := out.write(indexFile, writeBytes(idx)); err != nil {
		return err
	}
	// A tied base keeps its embedding; the adapted unembedding is lm_head.
	untie := m.base.Config.TieWordEmbeddings && m.updates[lmHeadName] != nil
	cfg, err := mergedConfig(m.base.Dir, untie, m.dtype, m.dequantisesMXFP4())
	if err != nil {
		return err
	}
	if err := out.write("config.json", writeBytes(cfg)); err != nil {
		return err
	}
	for _, f := range files {
		if err := out.write(f, copyFrom(filepath.Join(m.base.Dir, f))); err != nil {
			return err
		}
	}
	card := mergedCard(o, a, m)
	if err := out.write("README.md", writeBytes(card)); err != nil {
		return err
	}
	res.Bytes = out.written
	return nil
}

func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

func copyFrom(path string) func(io.Writer) error {
	return func(w io.Writer) error {
		f, err := userfile.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
}

// newMerger checks every adapted matrix against the base's shard headers
// (present, 2-D, float, the right shape) and sizes the output.
func newMerger(base *Base, a *Adapter, dt safetensors.DType) (*merger, int64, error) {
	infos, err := scanShards(base)
	if err != nil {
		return nil, 0, err
	}
	m := &merger{base: base, updates: map[string]*update{}, dtype: dt, weightMap: map[string]string{}}
	if err := m.planMXFP4(infos); err != nil {
		return nil, 0, err
	}
	mods, fused, err := fuseExperts(base.Config, a.Modules, infos, a.Scale)
	if err != nil {
		return nil, 0, err
	}
	for name, u := range fused {
		m.updates[name] = u
	}
	if err := m.settleMXFP4(infos); err != nil {
		return nil, 0, err
	}
	for _, mod := range mods {
		name := mod.Path + ".weight"
		t, ok := infos[name]
		if !ok && name == lmHeadName {
			t, ok = infos[embedName]
			m.untie = ok
		}
		if !ok {
			return nil, 0, fmt.Errorf("base %s has no tensor %s for adapter module %s", base.Dir, name, mod.Path)
		}
		if len(t.Shape) != 2 || !isFloat(t.DType) || t.Shape[0] != mod.B.Shape[0] || t.Shape[1] != mod.A.Shape[1] {
			return nil, 0, fmt.Errorf("base tensor %s is %s %v, adapter module %s updates a [%d %d] matrix",
				name, t.DType, t.Shape, mod.Path, mod.B.Shape[0], mod.A.Shape[1])
		}
		u, err := newUpdate(mod, a.Scale)
		if err != nil {
			return nil, 0, err
		}
		m.updates[name] = u
	}
	var need int64
	for name, t := range infos {
		t.DType = m.outDType(t.DType)
		need += t.Bytes()
		if name == embedName && m.untie {
			need += t.Bytes()
		}
	}
	return m, need, nil
}

// scanShards reads every shard's header: tensor names, dtypes, shapes.
func scanShards(base *Base) (map[string]safetensors.TensorInfo, error) {
	infos := map[string]safetensors.TensorInfo{}
	for _, s := range base.Shards {
		h, err := readShardHeader(filepath.Join(base.Dir, s))
		if err != nil {
			return nil, err
		}
		for _, t := range h.Tensors {
			if _, dup := infos[t.Name]; dup {
				return nil, fmt.Errorf("base %s: tensor %s is in two shards", base.Dir, t.Name)
			}
			infos[t.Name] = t
		}
	}
	return infos, nil
}

func readShardHeader(path string) (*safetensors.Header, error) {
	f, err := userfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("base shard: %w", err)
	}
	defer f.Close()
	h, err := safetensors.ReadHeader(f)
	if err != nil {
		return nil, fmt.Errorf("base shard: %w", err)
	}
	return h, nil
}

// weightExts are files of other weight formats, never copied.
var weightExts = []string{".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack", ".ckpt", ".onnx", ".npz"}

// sideFiles lists the base's top-level files to copy: tokenizer,
// generation config, chat template, licence… everything but weights,
// the index, config.json (rewritten) and README.md (replaced).
func sideFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("base %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || n == indexFile || n == "config.json" || strings.EqualFold(n, "README.md") || hasWeightExt(n) {
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, n)); err != nil || !st.Mode().IsRegular() {
			continue // directories (original/ …) and dangling links
		}
		out = append(out, n)
	}
	return out, nil
}

func hasWeightExt(n string) bool {
	for _, ext := range weightExts {
		if strings.HasSuffix(strings.ToLower(n), ext) {
			return true
		}
	}
	return false
}

func filesSize(dir string, files []string) int64 {
	var n int64
	for _, f := range files {
		if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
			n += st.Size()
		}
	}
	return n + 1<<20 // config, index, card
}

// mergedConfig is the base's config.json, untied and retyped as needed
// (other keys kept, numbers exact).
func mergedConfig(dir string, untie bool, dt safetensors.DType, dequantised bool) ([]byte, error) {
	raw, err := userfile.ReadFile(filepath.Join(dir, "config.json"), maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("base config: %w", err)
	}
	if !untie && dt == "" && !dequantised {
		return raw, nil
	}
	var cfg map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("base config: %w", err)
	}
	if untie {
		cfg["tie_word_embeddings"] = false
	}
	if dequantised { // MXFP4 experts (mxfp4.go), FP8 or INT4 weights (latent_merge.go) written dense
		delete(cfg, "quantization_config")
		if tc, ok := cfg["text_config"].(map[string]any); ok {
			delete(tc, "quantization_config")
		}
		if dt == "" {
			dt = safetensors.BF16
		}
	}
	if dt != "" {
		cfg["torch_dtype"] = torchDType(dt)
		if _, ok := cfg["dtype"]; ok {
			cfg["dtype"] = torchDType(dt)
		}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	return append(b, '\n'), err
}
