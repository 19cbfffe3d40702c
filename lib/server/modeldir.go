package server

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
)

// RegisterModelDir makes a Hugging Face model directory, served under a
// name outside the catalog (tinker serve --model NAME=DIR), a base model
// the server offers for create_model, sampling and training. Its shape
// comes from the directory's config.json, which must describe a dense
// Llama 3 or Qwen3 model. Names in the catalog need no registration.
func RegisterModelDir(name, dir string) error {
	if _, ok := models.Lookup(name); ok {
		return nil
	}
	c, err := engine.ReadConfig(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	ctx := c.MaxPositionEmbeddings
	if ctx <= 0 {
		ctx = 4096
	}
	return models.Register(models.Arch{Name: name, Family: c.Family, Layers: c.Layers, Hidden: c.Hidden,
		Intermediate: c.Intermediate, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Vocab: c.VocabSize,
		TiedEmbeddings: c.TieWordEmbeddings, MaxContext: ctx, RMSNormEps: c.RMSNormEps, RopeTheta: c.RopeTheta,
		TokenizerID: name})
}
