package ops

import (
	"context"
	"fmt"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

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
	return SavedCheckpoint(ctx, s.Client(), path)
}

// SavedCheckpoint fetches a just-saved checkpoint as its run lists it.
func SavedCheckpoint(ctx context.Context, c *tinkerapi.Client, path string) (*Checkpoint, error) {
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
