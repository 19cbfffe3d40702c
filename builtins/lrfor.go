package builtins

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/train"
)

// lrforBuiltins are the builtins lrfor.go defines (registryParts lists them).
var lrforBuiltins = []entry{
	{docEntry{
		Name:      "lr_for",
		Signature: "lr_for(model)",
		Summary:   "The published LoRA learning rate for a base model: 5e-4 × (2000 / hidden size)^e, e fitted per family (Llama 0.781, Qwen 0.0775).",
		Details: "Hidden sizes come from the model catalog or a served --model directory's config.json. Families without a calibrated\n" +
			"exponent are an error: pass learning_rate yourself. The tiny local models (tinker-local/...) take Llama's exponent\n" +
			"whatever their family, so tiny-qwen3 learns in a few epochs as tiny-llama does (docs/training.md). model may also be\n" +
			"what sft(), dpo() and rl() start from: a tinker://…/weights/… state, a checkpoint or a run (its base model's rate).",
		Example: `lr_for("meta-llama/Llama-3.1-8B")`,
	}, lrFor},
}

func lrFor(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var modelV starlark.Value
	if err := unpackArgs(b.Name(), args, kwargs, "model", &modelV); err != nil {
		return nil, err
	}
	fail := func(err error) error { return fmt.Errorf("%s: %w", b.Name(), err) }
	model, err := startArg(modelV)
	if err != nil {
		return nil, fail(err)
	}
	if strings.HasPrefix(model, "tinker://") {
		// A state: its base model, looked up as the training loops do.
		env, ctx := envOf(thread), ContextOf(thread)
		s, err := env.Session(ctx)
		if err != nil {
			return nil, apiErr(err)
		}
		if model, err = train.BaseOf(ctx, s, model); err != nil {
			return nil, fail(sessionErr(err))
		}
	}
	lr, err := models.LoRALearningRate(model)
	if err != nil {
		return nil, fail(err)
	}
	return starlark.Float(lr), nil
}
