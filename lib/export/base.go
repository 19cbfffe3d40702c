package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/userfile"
)

// Base is a base model directory about to be merged into.
type Base struct {
	Dir    string
	Config engine.Config
	// Shards are the weight files' names in the base's order; Index is
	// true when the base lists them in model.safetensors.index.json.
	Shards []string
	Index  bool
}

const indexFile = "model.safetensors.index.json"

// OpenBase reads dir's config.json (which must describe a dense Llama 3 or
// Qwen3 model) and finds its safetensors shards.
func OpenBase(dir string) (*Base, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("base directory %s does not exist", dir)
	}
	c, err := engine.ReadConfig(dir)
	if err != nil {
		return nil, fmt.Errorf("base %s: %w", dir, err)
	}
	b := &Base{Dir: dir, Config: c}
	if err := b.findShards(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Base) findShards() error {
	idx, err := userfile.ReadFile(filepath.Join(b.Dir, indexFile), maxIndexBytes)
	switch {
	case err == nil:
		var index struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(idx, &index); err != nil {
			return fmt.Errorf("base %s: parse %s: %w", b.Dir, indexFile, err)
		}
		seen := map[string]bool{}
		for _, f := range index.WeightMap {
			if strings.ContainsAny(f, `/\`) || f == ".." || !strings.HasSuffix(f, ".safetensors") {
				return fmt.Errorf("base %s: %s names %q, not a shard file beside it", b.Dir, indexFile, f)
			}
			if !seen[f] {
				seen[f] = true
				b.Shards = append(b.Shards, f)
			}
		}
		sort.Strings(b.Shards)
		b.Index = true
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat(filepath.Join(b.Dir, "model.safetensors")); err != nil {
			return fmt.Errorf("base %s has no model.safetensors or %s", b.Dir, indexFile)
		}
		b.Shards = []string{"model.safetensors"}
	default:
		return fmt.Errorf("base %s: %w", b.Dir, err)
	}
	if len(b.Shards) == 0 {
		return fmt.Errorf("base %s: %s lists no shards", b.Dir, indexFile)
	}
	return nil
}

// FindBase locates the base model's directory: dir when given, else the
// model's snapshot in the Hugging Face cache, else (for the local server's
// built-in tiny models) a generated copy under tmp.
func FindBase(dir, baseModel, tmp string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if baseModel == "" {
		return "", errors.New("the adapter does not name its base model: pass --base DIR (a Hugging Face model directory)")
	}
	if err := CheckGQAFamily(baseModel, "exported"); err != nil {
		return "", err
	}
	if d, err := engine.FindModelDir(baseModel); err == nil {
		return d, nil
	}
	if models.IsTiny(baseModel) {
		return writeTinyBase(baseModel, tmp)
	}
	return "", fmt.Errorf("base model %s is not in the Hugging Face cache (%s): download it with `hf download %s`, or pass --base DIR",
		baseModel, strings.Join(engine.HFCacheDirs(), ", "), baseModel)
}

// CheckMatch refuses a base whose shape differs from the model the
// checkpoint was trained on, naming both.
func CheckMatch(baseModel string, b *Base) error {
	arch, ok := models.Lookup(baseModel)
	if !ok {
		return nil // unknown name: the adapter's shapes are still checked
	}
	c := b.Config
	if arch.Family == c.Family && arch.Layers == c.Layers && arch.Hidden == c.Hidden && arch.Intermediate == c.Intermediate &&
		arch.Heads == c.Heads && arch.KVHeads == c.KVHeads && arch.HeadDim == c.HeadDim && arch.VocabSize == c.VocabSize &&
		arch.Experts == c.Experts && arch.MoEIntermediate == c.MoEIntermediate {
		return nil
	}
	return fmt.Errorf("checkpoint base model %s (%s, %d layers, hidden %d, vocab %d) does not match the base directory %s (%s, %d layers, hidden %d, vocab %d)",
		baseModel, arch.Family, arch.Layers, arch.Hidden, arch.VocabSize, b.Dir, c.Family, c.Layers, c.Hidden, c.VocabSize)
}

// CheckGQAFamily refuses a base model whose family this path cannot take:
// it takes the families with grouped-query attention (q/k/v/o_proj), dense
// or mixture-of-experts (Llama 3, Qwen3, Qwen3-MoE, GPT-OSS), not
// DeepSeek's latent attention and shared experts, which have their own
// path. verb says what is refused ("exported", "imported"), so the message
// names what the user tried.
func CheckGQAFamily(baseModel, verb string) error {
	f, ok := models.FamilyOf(baseModel)
	if !ok || f == models.Llama3 || f == models.Qwen3 || f == models.Qwen3MoE || f == models.GptOss {
		return nil
	}
	return fmt.Errorf("base model %s is a %s model: only Llama 3, Qwen3, Qwen3-MoE and GPT-OSS models can be %s", baseModel, f, verb)
}

// Bounds on the JSON files of an adapter or base directory (docs/bounds.md).
const (
	maxConfigBytes = peft.MaxConfigBytes
	maxIndexBytes  = 64 << 20 // model.safetensors.index.json of the largest models is a few MB
)
