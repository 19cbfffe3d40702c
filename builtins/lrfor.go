package builtins

import (
	"fmt"

	"go.starlark.net/starlark"

	"github.com/tinkershell/tinker/lib/models"
)

func init() {
	register(docEntry{
		Name:      "lr_for",
		Signature: "lr_for(model)",
		Summary:   "The published LoRA learning rate for a base model: 5e-4 × (2000 / hidden size)^e, e fitted per family (Llama 0.781, Qwen 0.0775).",
		Details: "Hidden sizes come from the model catalog or a served --model directory's config.json. Families without a calibrated\n" +
			"exponent are an error: pass learning_rate yourself. The tiny local models (tinker-local/...) take Llama's exponent\n" +
			"whatever their family, so tiny-qwen3 learns in a few epochs as tiny-llama does (docs/training.md).",
		Example: `lr_for("meta-llama/Llama-3.1-8B")`,
	}, lrFor)
}

func lrFor(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var model string
	if err := unpackArgs(b.Name(), args, kwargs, "model", &model); err != nil {
		return nil, err
	}
	lr, err := models.LoRALearningRate(model)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	return starlark.Float(lr), nil
}
