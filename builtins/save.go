package builtins

import (
	"context"
	"fmt"

	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

func init() {
	register(docEntry{
		Name:      "save_checkpoint",
		Signature: "save_checkpoint(base_model, name=None, rank=32, seed=None, train_mlp=True, train_attn=True, train_unembed=True, ttl=None)",
		Summary:   "Create a fresh LoRA model on base_model and save its sampler weights; returns the new checkpoint.",
		Details: "name defaults to \"final\"; ttl (seconds) makes the checkpoint expire. The new run's adapter has\n" +
			"A initialised from seed and B zero, so it samples like the base model until trained.",
		Example: "cp = save_checkpoint(\"tinker-local/tiny-llama\", name=\"v1\", rank=8, seed=1)\nsample(cp, prompt=\"Hello\", max_tokens=8, temperature=0)",
	}, saveCheckpoint)
}

// SaveOptions configure SaveCheckpoint.
type SaveOptions struct {
	BaseModel string
	Name      string
	Lora      tinkerapi.LoraConfig
	TTL       *int64
}

// SaveCheckpoint creates a LoRA training run and saves its sampler weights,
// returning the checkpoint as listed by the service.
func SaveCheckpoint(ctx context.Context, s *tinkerapi.Session, o SaveOptions) (*Checkpoint, error) {
	modelID, err := s.CreateModel(ctx, o.BaseModel, o.Lora, nil)
	if err != nil {
		return nil, err // CreateModel's errors say "create model" already
	}
	name := o.Name
	if name == "" {
		name = "final"
	}
	path, err := s.SaveWeightsForSampler(ctx, modelID, name, o.TTL)
	if err != nil {
		return nil, fmt.Errorf("save sampler weights: %w", err)
	}
	return savedCheckpoint(ctx, s.Client(), path)
}

// savedCheckpoint fetches a just-saved checkpoint as its run lists it.
func savedCheckpoint(ctx context.Context, c *tinkerapi.Client, path string) (*Checkpoint, error) {
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		return nil, err
	}
	list, err := c.ListRunCheckpoints(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	run, err := c.GetTrainingRun(ctx, p.RunID, "owned")
	if err != nil {
		return nil, err
	}
	for i := range list.Checkpoints {
		if list.Checkpoints[i].TinkerPath == path {
			return &Checkpoint{C: list.Checkpoints[i], Run: run}, nil
		}
	}
	return nil, fmt.Errorf("saved %s but the service does not list it", path)
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
	cp, err := SaveCheckpoint(ContextOf(thread), s, SaveOptions{BaseModel: base, Name: name, Lora: lora, TTL: ttl})
	if err != nil {
		return nil, sessionErr(err)
	}
	return cp, nil
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
