package safetensors

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// IndexFile names the index of a sharded model directory.
const IndexFile = "model.safetensors.index.json"

// WriteDir writes shards as a Hugging Face model directory's weights: one
// model.safetensors for a single shard, else model-0000k-of-0000n.safetensors
// files and the index mapping each tensor to its file. Each shard's
// tensors are written in name order. It is how built-in tiny bases become
// directories and how tests lay out the models they load.
func WriteDir(dir string, shards [][]Tensor) error {
	weightMap := map[string]string{}
	for k, part := range shards {
		file := "model.safetensors"
		if len(shards) > 1 {
			file = fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, len(shards))
		}
		part = slices.SortedFunc(slices.Values(part), func(a, b Tensor) int { return strings.Compare(a.Name, b.Name) })
		if err := writeFile(filepath.Join(dir, file), part); err != nil {
			return err
		}
		for _, t := range part {
			weightMap[t.Name] = file
		}
	}
	if len(shards) < 2 {
		return nil
	}
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, IndexFile), b, 0o644)
}

func writeFile(path string, ts []Tensor) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, ts, map[string]string{"format": "pt"}); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// FromFloat32 is a tensor of the given dtype (F32, F16 or BF16) holding vals.
func FromFloat32(name string, dtype DType, shape []int, vals []float32) (Tensor, error) {
	data, err := EncodeFloat32(dtype, vals)
	if err != nil {
		return Tensor{}, err
	}
	s := make([]int64, len(shape))
	for i, d := range shape {
		s[i] = int64(d)
	}
	return Tensor{Name: name, DType: dtype, Shape: s, Data: data}, nil
}
