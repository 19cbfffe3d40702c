package export

import (
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// DeepSeek V3.1 and Kimi K2 ("latent" models: multi-head latent attention
// and shared experts) are adapted as the service does: attention
// q_a_proj, kv_a_proj_with_mqa and o_proj, the first dense layers' MLP,
// the shared experts' MLP, the routed experts as stacked mlp.experts.w1
// (gate_proj), w3 (up_proj) and w2 (down_proj) whose factor on the hidden
// side may be one matrix for all experts ([1, ...]), and the unembedding.
// Reading expands the stacked pairs into one module per expert under the
// names the released checkpoints use (mlp.experts.{e}.gate_proj); the
// expert modules' tensors alias the stacked ones, so a shared factor is
// held once. A PEFT adapter with per-expert modules reads as well, and
// Kimi K2.5/K2.6's language_model. prefix is dropped (added back against
// the base that has it).
var latentModule = lazyre.New(`^(?:model\.layers\.\d+\.(?:self_attn\.(?:q_a_proj|q_b_proj|kv_a_proj_with_mqa|kv_b_proj|q_proj|o_proj)|` +
	`mlp\.(?:shared_experts\.|experts\.\d+\.)?(?:gate|up|down)_proj|mlp\.experts\.w[123])|lm_head)$`)

// latentStacked is a stacked expert module: layer prefix and kind.
var latentStacked = lazyre.New(`^(model\.layers\.\d+\.mlp\.experts)\.(w[123])$`)

// kimiPrefix is the outer prefix of Kimi K2.5/K2.6's text model.
const kimiPrefix = "language_model."

// ReadLatentAdapter opens a DeepSeek V3.1 / Kimi K2 adapter in dir.
func ReadLatentAdapter(dir string) (*Adapter, error) {
	return readAdapter(dir, (*Adapter).collectLatent)
}

// collectLatent pairs the tensors into modules, one per expert.
func (a *Adapter) collectLatent() error {
	byPath, err := latentHalves(a.file)
	if err != nil {
		return err
	}
	if err := expandExperts(byPath, int64(a.Config.R)); err != nil {
		return err
	}
	return a.pair(byPath)
}

// latentHalves groups the weights file's tensors by module.
func latentHalves(f *safetensors.File) (map[string]*Module, error) {
	byPath := map[string]*Module{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		m := loraKey.FindStringSubmatch(t.Name)
		if m == nil {
			return nil, fmt.Errorf("%s: unknown key %s (only base_model.model.<module>.lora_A/lora_B.weight)", peft.WeightsFile, t.Name)
		}
		path := hfPath(strings.TrimPrefix(m[1], kimiPrefix))
		if path == "model.lm_head" {
			path = "lm_head"
		}
		if !latentModule.MatchString(path) {
			return nil, fmt.Errorf("%s: unknown key %s (module %s is not a DeepSeek V3 / Kimi K2 projection)", peft.WeightsFile, t.Name, path)
		}
		if err := addHalf(byPath, path, m[2], t); err != nil {
			return nil, err
		}
	}
	return byPath, nil
}

// expandExperts replaces each stacked expert module by its experts'.
func expandExperts(byPath map[string]*Module, r int64) error {
	for path, m := range byPath {
		sm := latentStacked.FindStringSubmatch(path)
		if sm == nil || m.A == nil || m.B == nil {
			continue
		}
		e, err := stackedExperts(path, m, r)
		if err != nil {
			return fmt.Errorf("%s: %w", peft.WeightsFile, err)
		}
		delete(byPath, path)
		for i := range e {
			p := fmt.Sprintf("%s.%d.%s", sm[1], i, stackedProjOf(sm[2]))
			if byPath[p] != nil {
				return fmt.Errorf("%s: expert module %s is in the adapter both stacked (%s) and alone", peft.WeightsFile, p, path)
			}
			byPath[p] = &Module{Path: p, A: expertOf(m.A, i), B: expertOf(m.B, i)}
		}
	}
	return nil
}

// stackedProj pairs the stacked names with the projection each adapts: an
// array, laid out as data, where a package-level map would be built at
// every start of tinker.
var stackedProj = [...]struct{ w, proj string }{{"w1", "gate_proj"}, {"w2", "down_proj"}, {"w3", "up_proj"}}

// stackedProjOf is the projection stacked name w adapts ("" for none).
func stackedProjOf(w string) string {
	for _, p := range stackedProj {
		if p.w == w {
			return p.proj
		}
	}
	return ""
}

// stackedExperts checks a stacked pair's shapes and returns the number of
// experts: lora_A [E or 1, r, in], lora_B [E or 1, out, r].
func stackedExperts(path string, m *Module, r int64) (int64, error) {
	a, b := m.A.Shape, m.B.Shape
	if len(a) != 3 || len(b) != 3 || a[1] != r || b[2] != r || a[0] < 1 || b[0] < 1 {
		return 0, fmt.Errorf("expert module %s has lora_A %v and lora_B %v, want [experts, %d, in] and [experts, out, %d]", path, a, b, r, r)
	}
	e := max(a[0], b[0])
	if (a[0] != e && a[0] != 1) || (b[0] != e && b[0] != 1) || e == 1 {
		return 0, fmt.Errorf("expert module %s has lora_A for %d experts and lora_B for %d: want equal counts, or 1 for a factor all experts share", path, a[0], b[0])
	}
	return e, nil
}

// expertOf is expert e's [rows, cols] matrix of a stacked tensor; a
// tensor of one matrix is every expert's.
func expertOf(t *safetensors.Tensor, e int64) *safetensors.Tensor {
	if t.Shape[0] == 1 {
		e = 0
	}
	return expertSlice(t, e)
}
