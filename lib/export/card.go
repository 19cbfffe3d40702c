package export

import (
	"fmt"
	"strings"
)

// mergedCard is the merged model's README.md: what it was made from.
func mergedCard(o Options, a *Adapter, m *merger) []byte {
	var b strings.Builder
	b.WriteString("---\n")
	if o.BaseModel != "" {
		fmt.Fprintf(&b, "base_model: %s\n", o.BaseModel)
	}
	b.WriteString("library_name: transformers\ntags:\n- tinker\n- lora\n- merged\n---\n\n")
	fmt.Fprintf(&b, "# Merged model\n\nThe LoRA checkpoint `%s` merged into its base model, exported by tinker.\n\n", o.Checkpoint)
	writeFacts(&b, o, a)
	dtype := "the base's dtype"
	if m.dtype != "" {
		dtype = torchDType(m.dtype)
	}
	fmt.Fprintf(&b, "- merge: W' = W + (lora_alpha/r)·B·A for every adapted matrix, in float32, rounded once to %s\n", dtype)
	if m.untie {
		b.WriteString("- the base ties its embeddings; lm_head.weight is written separately (embedding + update), so tie_word_embeddings is false\n")
	}
	return []byte(b.String())
}

// peftCard is the PEFT adapter's README.md.
func peftCard(o Options, a *Adapter) []byte {
	var b strings.Builder
	b.WriteString("---\n")
	if o.BaseModel != "" {
		fmt.Fprintf(&b, "base_model: %s\n", o.BaseModel)
	}
	b.WriteString("library_name: peft\ntags:\n- tinker\n- lora\n---\n\n")
	fmt.Fprintf(&b, "# LoRA adapter\n\nThe LoRA checkpoint `%s` as a PEFT adapter, exported by tinker.\n\n", o.Checkpoint)
	writeFacts(&b, o, a)
	return []byte(b.String())
}

func writeFacts(b *strings.Builder, o Options, a *Adapter) {
	base := o.BaseModel
	if base == "" {
		base = "(not named by the checkpoint)"
	}
	fmt.Fprintf(b, "- base model: %s\n- checkpoint: %s\n", base, o.Checkpoint)
	fmt.Fprintf(b, "- LoRA: r=%d, lora_alpha=%v, target_modules=%s (%d matrices)\n",
		a.Config.R, a.Config.LoraAlpha, strings.Join(a.Targets(), ", "), len(a.Modules))
}
