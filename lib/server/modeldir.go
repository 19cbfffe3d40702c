package server

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
)

// RegisterModelDir makes a Hugging Face model directory, served under a
// name outside the catalog (tinker serve --model NAME=DIR), a base model
// the server offers for create_model, sampling and training. Its shape
// comes from the directory's config.json as the engine reads it (the one
// parser of config.json), which must describe a dense Llama 3 or Qwen3 model;
// a config without max_position_embeddings gets a context of 4096. Names in
// the catalog need no registration.
func RegisterModelDir(name, dir string) error {
	if _, ok := models.Lookup(name); ok {
		return nil
	}
	c, err := engine.ReadConfig(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if c.MaxPositionEmbeddings <= 0 {
		c.MaxPositionEmbeddings = 4096
	}
	return models.Register(models.Arch{Name: name, Shape: c.Shape, TokenizerID: name, Dir: dir})
}
