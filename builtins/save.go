package builtins

import (
	"context"
	"fmt"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// saveBuiltins are the builtins save.go defines (registryParts lists them).
var saveBuiltins = []entry{
	{docEntry{
		Name:      "save_checkpoint",
		Signature: "save_checkpoint(base_model, name=None, rank=32, seed=None, train_mlp=True, train_attn=True, train_unembed=True, ttl=None)",
		Summary:   "Create a fresh LoRA model on base_model and save its sampler weights; returns the new checkpoint.",
		Details: "name defaults to \"final\"; ttl (seconds) makes the checkpoint expire. The new run's adapter has\n" +
			"A initialised from seed and B zero, so it samples like the base model until trained.",
		Example: "cp = save_checkpoint(\"tinker-local/tiny-llama\", name=\"v1\", rank=8, seed=1)\nsample(cp, prompt=\"Hello\", max_tokens=8, temperature=0)",
	}, saveCheckpoint},
}

func saveCheckpoint(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var base string
	var nameV, seedV, ttlV starlark.Value = starlark.None, starlark.None, starlark.None
	lora := tinkerapi.DefaultLoraConfig()
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "base_model", &base, "name?", &nameV, "rank?", &lora.Rank,
		"seed?", &seedV, "train_mlp?", &lora.TrainMLP, "train_attn?", &lora.TrainAttn, "train_unembed?", &lora.TrainUnembed, "ttl?", &ttlV); err != nil {
		return nil, err
	}
	name, err := optString(nameV, "name")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	if lora.Seed, err = optInt64Arg(seedV, "seed"); err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	ttl, err := optInt64Arg(ttlV, "ttl")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	if ttl != nil && *ttl <= 0 {
		return nil, fmt.Errorf("%s: ttl must be a positive number of seconds", b.Name())
	}
	if lora.Rank <= 0 {
		return nil, fmt.Errorf("%s: rank must be positive, got %d", b.Name(), lora.Rank)
	}
	if !lora.TrainMLP && !lora.TrainAttn && !lora.TrainUnembed {
		return nil, fmt.Errorf("%s: at least one of train_mlp, train_attn, train_unembed must be True", b.Name())
	}
	env := envOf(thread)
	s, err := env.Session(ContextOf(thread))
	if err != nil {
		return nil, apiErr(err)
	}
	defer env.clearStatus()
	cp, err := ops.SaveCheckpoint(ContextOf(thread), s, ops.SaveOptions{BaseModel: base, Name: name, Lora: lora, TTL: ttl})
	if err != nil {
		return nil, sessionErr(err)
	}
	return &Checkpoint{*cp}, nil
}

// savedCheckpoint fetches a just-saved checkpoint as its run lists it.
func savedCheckpoint(ctx context.Context, c *tinkerapi.Client, path string) (*Checkpoint, error) {
	cp, err := ops.SavedCheckpoint(ctx, c, path)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{*cp}, nil
}

func optInt64Arg(v starlark.Value, name string) (*int64, error) {
	if v == starlark.None {
		return nil, nil
	}
	i, ok := v.(starlark.Int)
	if !ok {
		return nil, fmt.Errorf("%s must be an int or None, got %s", name, v.Type())
	}
	n, ok := i.Int64()
	if !ok {
		return nil, fmt.Errorf("%s is out of range", name)
	}
	return &n, nil
}
