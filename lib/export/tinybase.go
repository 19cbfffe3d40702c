package export

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// writeTinyBase writes a built-in tiny model (whose weights the engine
// generates, so no download exists) as a Hugging Face model directory in
// a new directory under tmp, so it merges like any other base.
func writeTinyBase(name, tmp string) (string, error) {
	c, ts, err := engine.TinyTensors(name)
	if err != nil {
		return "", err
	}
	cfg, err := c.HFConfigJSON()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(tmp, "tiny-base-")
	if err != nil {
		return "", fmt.Errorf("tiny base model: %w", err)
	}
	if err := writeTensorsDir(dir, ts); err != nil {
		return "", fmt.Errorf("tiny base model: %w", err)
	}
	for file, b := range map[string][]byte{"config.json": cfg, "tokenizer.json": tokenizer.TinyJSON()} {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			return "", fmt.Errorf("tiny base model: %w", err)
		}
	}
	return dir, nil
}

// writeTensorsDir writes float32 engine tensors as dir's one safetensors file.
func writeTensorsDir(dir string, ts engine.Tensors) error {
	out := make([]safetensors.Tensor, 0, len(ts))
	for n, x := range ts {
		st, err := safetensors.FromFloat32(n, safetensors.F32, x.Shape, x.Data)
		if err != nil {
			return err
		}
		out = append(out, st)
	}
	return safetensors.WriteDir(dir, [][]safetensors.Tensor{out})
}
