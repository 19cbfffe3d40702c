package models

import (
	"fmt"
	"strings"
)

// Models of the service's 2026 lineup (tinker-cookbook's model_info.py, as
// of August 2026) that the catalog cannot shape, with what it lacks. Their
// hidden sizes are tinker-cookbook's (hyperparam_utils.py), which is all the
// learning-rate rule needs; each agrees with the cookbook's LoRA parameter
// count for the unembedding (hidden + vocab: 248320 for Qwen3.5/3.6/3.8,
// 131072 for Nemotron 3).
type lineupModel struct {
	name    string
	hidden  int
	missing string // why the catalog has no shape for it
}

const (
	missingGatedDeltaNet = "its layers mix Gated DeltaNet linear attention with full attention (qwen3_5 / qwen3_5_moe), which the catalog's shapes cannot describe, so its LoRA adapters cannot be shaped"
	missingMamba         = "its layers mix Mamba-2, attention and mixture-of-experts blocks (nemotron_h), which the catalog's shapes cannot describe, so its LoRA adapters cannot be shaped"
	missingPrivate       = "its config.json is private to Thinking Machines"
)

// lineup is a slice, not a map: a map literal is built at every start
// (docs/architecture.md, "Where a change goes": package-level state), a slice is static data.
var lineup = []lineupModel{
	{"Qwen/Qwen3.5-4B", 2560, missingGatedDeltaNet},
	{"Qwen/Qwen3.5-9B", 4096, missingGatedDeltaNet},
	{"Qwen/Qwen3.5-9B-Base", 4096, missingGatedDeltaNet},
	{"Qwen/Qwen3.5-27B", 5120, missingGatedDeltaNet},
	{"Qwen/Qwen3.5-35B-A3B", 2048, missingGatedDeltaNet},
	{"Qwen/Qwen3.5-35B-A3B-Base", 2048, missingGatedDeltaNet},
	{"Qwen/Qwen3.5-397B-A17B", 4096, missingGatedDeltaNet},
	{"Qwen/Qwen3.6-27B", 5120, missingGatedDeltaNet},
	{"Qwen/Qwen3.6-35B-A3B", 2048, missingGatedDeltaNet},
	{"Qwen/Qwen3.8-27B", 5120, missingGatedDeltaNet},

	{"nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 2688, missingMamba},
	{"nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", 4096, missingMamba},
	{"nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", 8192, missingMamba},
	{"nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16", 2688, missingMamba},

	{"thinkingmachines/Inkling", 6144, missingPrivate},
	{"thinkingmachines/Inkling-Small", 4096, missingPrivate},
}

// lookupLineup finds a lineup model outside the catalog (case-insensitive,
// ":suffix" ignored, as Lookup).
func lookupLineup(name string) (string, lineupModel, bool) {
	name, _, _ = strings.Cut(name, ":")
	for _, m := range lineup {
		if strings.EqualFold(m.name, name) {
			return m.name, m, true
		}
	}
	return "", lineupModel{}, false
}

// NotInCatalog is the one-line refusal for a base model the catalog does
// not have: for a model of the current lineup it names what is missing.
func NotInCatalog(name string) error {
	if n, m, ok := lookupLineup(name); ok {
		return fmt.Errorf("%s is not in tinker's model catalog: %s", n, m.missing)
	}
	return fmt.Errorf("unknown base model %q; see get_server_capabilities for the supported models", name)
}
