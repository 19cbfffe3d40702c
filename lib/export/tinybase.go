package export

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

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
	if err := writeTensorsFile(filepath.Join(dir, "model.safetensors"), ts); err != nil {
		return "", fmt.Errorf("tiny base model: %w", err)
	}
	for file, b := range map[string][]byte{"config.json": cfg, "tokenizer.json": tokenizer.TinyJSON()} {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			return "", fmt.Errorf("tiny base model: %w", err)
		}
	}
	return dir, nil
}

// writeTensorsFile writes float32 engine tensors as one safetensors file.
func writeTensorsFile(path string, ts engine.Tensors) error {
	out := make([]safetensors.Tensor, 0, len(ts))
	for n, x := range ts {
		data, err := safetensors.EncodeFloat32(safetensors.F32, x.Data)
		if err != nil {
			return err
		}
		shape := make([]int64, len(x.Shape))
		for i, d := range x.Shape {
			shape[i] = int64(d)
		}
		out = append(out, safetensors.Tensor{Name: n, DType: safetensors.F32, Shape: shape, Data: data})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := safetensors.Write(f, out, map[string]string{"format": "pt"}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
