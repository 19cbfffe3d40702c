package export

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/models"
)

// What a server does with each PEFT layout the export writes, read from
// vLLM's source (docs/compat.md, "Serving LoRA adapters", names each
// file and commit):
//
//   - vLLM refuses a whole adapter that has a module its model class does
//     not take (lora_model.py), and only Llama's class lists lm_head among
//     its LoRA modules (llama.py; qwen3.py, qwen3_moe.py, gpt_oss.py and
//     deepseek_v2.py do not);
//   - expert LoRA has two layouts (model_manager.py): per expert
//     (mlp.experts.N.gate_proj, ...) for every MoE class but those with
//     is_3d_moe_weight, and fused (PEFT's target_parameters:
//     mlp.experts.base_layer = gate_up_proj, mlp.experts = down_proj) for
//     those, GPT-OSS among them; --enable-mixed-moe-lora-format takes
//     both;
//   - vLLM scales every module by lora_alpha/r (peft_helper.py reads no
//     rank_pattern): the fused gate_up_proj keeps that ratio at rank 2r,
//     which must fit --max-lora-rank;
//   - KimiK25ForConditionalGeneration takes no LoRA (kimi_k25.py).
//
// SGLang's expert LoRA (lora_moe_runners.py) exists, but which file
// layouts it reads was not checked, so the notes send SGLang users to the
// merged export.

// Expert layouts of a PEFT export (Options.Experts; "" chooses).
const (
	ExpertsPerExpert = "per-expert"
	ExpertsFused     = "fused"
)

// UnembedWarning is shown when a PEFT export of a model other than
// Llama adapts the unembedding.
const UnembedWarning = "the adapter trains the unembedding (lm_head): vLLM takes LoRA on lm_head for Llama only and refuses an adapter with it on other models; " +
	"export with --format merged (format=\"merged\") to serve it"

// The export's one line on serving experts, per family and layout.
const (
	MoEServeWarning = "Qwen3-MoE experts are written per expert, the layout vLLM's Qwen3-MoE LoRA loads (experimental, per tinker-cookbook); " +
		"for SGLang, export with --format merged (format=\"merged\")"
	MoEFusedWarning = "Qwen3-MoE experts are written fused (target_parameters) for PEFT on transformers 5.x; vLLM loads Qwen3-MoE experts per expert: " +
		"export with --experts per-expert to serve with vLLM"
	GptOssPerExpertWarning = "GPT-OSS experts are written per expert: vLLM loads them only with --enable-mixed-moe-lora-format, PEFT on transformers not at all " +
		"(both expect them fused): export without --experts per-expert for those"
	LatentServeWarning = "vLLM's DeepseekV3ForCausalLM loads this layout (experts per expert; tinker-cookbook calls expert LoRA experimental and builds none for DeepSeek V3); " +
		"for SGLang, export with --format merged (format=\"merged\")"
	KimiK25ServeWarning = "vLLM takes no LoRA on Kimi K2.5/K2.6 (KimiK25ForConditionalGeneration): " +
		"export with --format merged (format=\"merged\") to serve the model"
)

// gptOssFusedWarning is the line for GPT-OSS's fused experts at rank r.
func gptOssFusedWarning(r int) string {
	return fmt.Sprintf("GPT-OSS experts are written fused (target_parameters), the layout vLLM's GptOssForCausalLM loads: start vLLM with --max-lora-rank %d or more "+
		"(gate_up_proj has rank 2r); vLLM 0.18 took no LoRA on the released MXFP4 experts, later vLLM does", 2*r)
}

// checkExperts checks Options.Experts against the format.
func checkExperts(o Options) error {
	switch o.Experts {
	case "":
		return nil
	case ExpertsPerExpert, ExpertsFused:
		if o.Format != PEFT {
			return fmt.Errorf("--experts %s chooses a PEFT layout: add --format peft, or drop --experts", o.Experts)
		}
		return nil
	}
	return fmt.Errorf("unknown --experts %q: use per-expert or fused", o.Experts)
}

// unembedWarnings is the lm_head line for an adapter on family f.
func unembedWarnings(a *Adapter, f models.Family) []string {
	if f == models.Llama3 || !(a.Has("lm_head") || a.Has(kimiPrefix+"lm_head")) {
		return nil
	}
	return []string{UnembedWarning}
}

// expertWarnings is the experts line of a PEFT export of a (GPT-OSS when
// gptOss) written fused or not.
func expertWarnings(a *Adapter, gptOss, fused bool) []string {
	switch {
	case !hasExperts(a):
		return nil
	case gptOss && fused:
		return []string{gptOssFusedWarning(a.Config.R)}
	case gptOss:
		return []string{GptOssPerExpertWarning}
	case fused:
		return []string{MoEFusedWarning}
	}
	return []string{MoEServeWarning}
}
