package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/hfhub"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// BF16Mode says what to do with bfloat16 weight matrices.
type BF16Mode int

const (
	// BF16Auto keeps bfloat16 matrices for models over 1B parameters
	// (where memory decides whether the model fits at all) and widens
	// them to float32 for smaller ones. The bits are the same either way
	// (bfloat16 widens exactly); what differs is speed. Kept bfloat16
	// halves the bytes a decoding step reads, and since the one-token
	// kernel prefetches (fwdRowLong) it decodes ~1.6x float32's tokens per
	// CPU-second on the Qwen3-0.6B shape (BenchmarkPrefillBF16, loaded
	// machine). Prefill and the training step are bound by arithmetic,
	// not memory, and there the kernels widen every weight they load:
	// 0.77x float32's prefill rate in the same loaded run, 1.1x in the
	// README's quiet one; the backward's products (which widen weight
	// strips) were level within the noise. Training and prefill are most
	// of this server's work on small models, so they stay widened until
	// a quiet interleaved run of BenchmarkPrefillBF16 and of a bf16
	// training step shows kept bfloat16 no slower there.
	// LoadOptions.BF16Compute keeps them at every size.
	BF16Auto BF16Mode = iota
	// BF16Keep keeps them: half the memory, faster decoding, prefill and
	// training near float32's rate (see BF16Auto). Results are identical:
	// bfloat16 widens exactly to float32.
	BF16Keep
	// BF16Widen converts them to float32 at load time.
	BF16Widen
)

// LoadOptions tune LoadDirWith.
type LoadOptions struct {
	BF16 BF16Mode
	// BF16Compute keeps bfloat16 matrices and runs their products on the
	// bf16 path (kernels_bf16.go: activations rounded to bfloat16, float32
	// sums, on AMX or AVX512-BF16); it needs a CPU with AVX512-BF16.
	BF16Compute bool
}

// errNoBF16Compute is LoadDirWith's answer to BF16Compute on a CPU
// without the instructions.
var errNoBF16Compute = errors.New("bf16 compute needs a CPU with AVX512-BF16 or AMX (this one has neither); load without it")

// LoadDir loads a Hugging Face model directory: config.json plus
// model.safetensors, or shards listed in model.safetensors.index.json (or,
// failing both, every *.safetensors file). F16 and F32 weights are widened
// to float32; BF16 matrices are handled per BF16Auto. The returned model
// has no tokenizer.
func LoadDir(dir string) (*Model, error) { return LoadDirWith(dir, LoadOptions{}) }

// LoadDirWith is LoadDir with options.
func LoadDirWith(dir string, opt LoadOptions) (*Model, error) {
	c, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	files, err := weightFiles(dir)
	if err != nil {
		return nil, err
	}
	want := ExpectedShapes(c)
	ts := make(Tensors, len(want))
	if opt.BF16Compute && !bf16Compute() {
		return nil, errNoBF16Compute
	}
	keepBF16 := opt.BF16Compute || opt.BF16 == BF16Keep || (opt.BF16 == BF16Auto && c.Params() > 1_000_000_000)
	var slab hugeSlab     // the matrices, in huge pages
	var parts gptOssParts // GPT-OSS's fused experts, converted once all files are read
	if c.Family == models.GptOss {
		parts = gptOssParts{}
	}
	var qp *quantParts // DeepSeek V3.1 / Kimi K2's FP8 or INT4 weights (quant_load.go)
	if c.Family == models.DeepSeekV3 {
		s, err := readQuantScheme(dir)
		if err != nil {
			return nil, err
		}
		qp = &quantParts{scheme: s, want: want, t: map[string]*safetensors.Tensor{}, slab: &slab}
	}
	for _, path := range files {
		if err := loadFile(path, c.TextPrefix, want, ts, keepBF16, parts, qp, &slab); err != nil {
			return nil, err
		}
	}
	if err := qp.finish(); err != nil {
		return nil, err
	}
	if err := parts.convert(c, ts, keepBF16, &slab); err != nil {
		return nil, err
	}
	m, err := New(dir, c, ts)
	if err != nil {
		return nil, err
	}
	if opt.BF16Compute {
		m.w.withBF16Compute()
	}
	// The directory's own tokenizer, when it ships one, serves Tokenizer()
	// and stop strings.
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
		if m.tok, err = tokenizer.Load(dir); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// loadFile converts the tensors of one safetensors file that the model uses
// (biases included); others, such as rotary caches, are skipped. A wrapped
// checkpoint's text model is read from under its prefix (kimi_k25.go).
func loadFile(path, prefix string, want map[string][]int, ts Tensors, keepBF16 bool, parts gptOssParts, qp *quantParts, slab *hugeSlab) error {
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("load weights: %w", err)
	}
	defer f.Close()
	tensors := textTensors(f.Tensors, prefix)
	for i := range tensors {
		st := &tensors[i]
		if parts != nil && parts.add(st) {
			continue
		}
		if ok, err := qp.add(st, ts, keepBF16); ok || err != nil {
			if err != nil {
				return fmt.Errorf("load weights %s: %w", path, err)
			}
			continue
		}
		if fusedExperts.MatchString(st.Name) {
			if err := splitFusedExperts(st, ts, keepBF16, slab); err != nil {
				return fmt.Errorf("load weights %s: %w", path, err)
			}
			continue
		}
		if _, ok := want[st.Name]; !ok && !strings.HasSuffix(st.Name, "_proj.bias") {
			continue
		}
		var t Tensor
		if keepBF16 && st.DType == safetensors.BF16 && len(st.Shape) == 2 {
			// Matrices stay bfloat16 (exact either way; half the memory).
			t = Tensor{Shape: []int{int(st.Shape[0]), int(st.Shape[1])}, BF16: hugeSlabAlloc[uint16](slab, len(st.Data)/2)}
			for i := range t.BF16 {
				t.BF16[i] = binary.LittleEndian.Uint16(st.Data[2*i:])
			}
		} else if t, err = toTensorIn(st, slab); err != nil {
			return fmt.Errorf("load weights %s: %w", path, err)
		}
		ts[st.Name] = t
	}
	return nil
}

func weightFiles(dir string) ([]string, error) {
	single := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return []string{single}, nil
	}
	idx, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json"))
	if err == nil {
		var index struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(idx, &index); err != nil {
			return nil, fmt.Errorf("parse model.safetensors.index.json: %w", err)
		}
		seen := map[string]bool{}
		var files []string
		for _, f := range index.WeightMap {
			if !seen[f] {
				seen[f] = true
				files = append(files, filepath.Join(dir, filepath.FromSlash(f)))
			}
		}
		sort.Strings(files)
		return files, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read model.safetensors.index.json: %w", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(files) == 0 {
		return nil, fmt.Errorf("no safetensors weights in %s (expected model.safetensors or model.safetensors.index.json)", dir)
	}
	sort.Strings(files)
	return files, nil
}

// HFCacheDirs returns the Hugging Face hub cache directories to search:
// the one huggingface_hub itself would use (lib/hfhub: $HF_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub), then ~/.cache/huggingface/hub as a fallback.
func HFCacheDirs() []string {
	dirs := []string{hfhub.FromEnv().CacheDir}
	if home, err := os.UserHomeDir(); err == nil {
		if d := filepath.Join(home, ".cache", "huggingface", "hub"); d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// FindModelDir finds a downloaded model ("org/name") in the Hugging Face
// cache: models--org--name/snapshots/<revision>, preferring the revision
// refs/main points to, else any snapshot holding config.json and weights.
func FindModelDir(name string) (string, error) {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	repo := "models--" + strings.ReplaceAll(name, "/", "--")
	for _, cache := range HFCacheDirs() {
		base := filepath.Join(cache, repo)
		var candidates []string
		if ref, err := os.ReadFile(filepath.Join(base, "refs", "main")); err == nil {
			candidates = append(candidates, filepath.Join(base, "snapshots", strings.TrimSpace(string(ref))))
		}
		snaps, _ := filepath.Glob(filepath.Join(base, "snapshots", "*"))
		sort.Strings(snaps)
		candidates = append(candidates, snaps...)
		for _, d := range candidates {
			if isModelDir(d) {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("weights for %s are not available locally: download them with `hf download %s` "+
		"(searched %s), or pass `--model %s=DIR` to `tinker serve`", name, name, strings.Join(HFCacheDirs(), ", "), name)
}

func isModelDir(d string) bool {
	if _, err := os.Stat(filepath.Join(d, "config.json")); err != nil {
		return false
	}
	_, err := weightFiles(d)
	return err == nil
}
