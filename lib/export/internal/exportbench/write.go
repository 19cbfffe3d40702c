package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// Writers the generated models share.

// writeShardsOf writes n shards, shard k holding the tensors part(k)
// filled by write, and their index.
func writeShardsOf(dir string, n int, part func(k int) []safetensors.TensorInfo, write func(string, []safetensors.TensorInfo, *rand.Rand) (int64, error), r *rand.Rand) (total, largest int64, err error) {
	weightMap := map[string]string{}
	for k := range n {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", k+1, n)
		ts := part(k)
		size, err := write(filepath.Join(dir, name), ts, r)
		if err != nil {
			return 0, 0, err
		}
		for _, t := range ts {
			weightMap[t.Name] = name
		}
		total, largest = total+size, max(largest, size)
	}
	return total, largest, writeJSON(filepath.Join(dir, safetensors.IndexFile), map[string]any{"weight_map": weightMap})
}

// companionSplit cuts ts into dsShards parts, a weight's scales and shape
// in its part.
func companionSplit(ts []safetensors.TensorInfo) func(k int) []safetensors.TensorInfo {
	return func(k int) []safetensors.TensorInfo { return ts[companionBoundary(ts, k):companionBoundary(ts, k+1)] }
}

// companionBoundary is where shard k of dsShards starts: past a weight's
// scales and shape, which stay in its shard.
func companionBoundary(ts []safetensors.TensorInfo, k int) int {
	i := len(ts) * k / dsShards
	for i < len(ts) && (strings.HasSuffix(ts[i].Name, "_scale_inv") || strings.HasSuffix(ts[i].Name, "_scale") || strings.HasSuffix(ts[i].Name, "_shape")) {
		i++
	}
	return i
}

// writeLayout writes the shard of tensors ts at path, each filled by fill
// (with a 1 MB scratch buffer), and returns its size.
func writeLayout(path string, ts []safetensors.TensorInfo, fill func(t safetensors.TensorInfo, w io.Writer, buf []byte) error) (int64, error) {
	l, err := safetensors.NewLayout(ts, map[string]string{"format": "pt"})
	if err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	_, err = l.WriteTo(f, func(_ int, t safetensors.TensorInfo, w io.Writer) error { return fill(t, w, buf) })
	return l.Size(), err
}

// writePairs writes an adapter directory: config cfg and a float32 pair
// of factors on each module of mods (A around 1/sqrt(in), B around 1e-3),
// and returns the factors' bytes.
func writePairs(dir string, cfg map[string]any, mods []tensorSpec, r *rand.Rand) (int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	if err := writeJSON(filepath.Join(dir, "adapter_config.json"), cfg); err != nil {
		return 0, err
	}
	var out []safetensors.Tensor
	var size int64
	add := func(name string, rows, cols int, sd float64) {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(r.NormFloat64() * sd)
		}
		b, _ := safetensors.EncodeFloat32(safetensors.F32, v)
		out = append(out, safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: []int64{int64(rows), int64(cols)}, Data: b})
		size += int64(4 * rows * cols)
	}
	for _, m := range mods {
		add("base_model.model."+m.name+".lora_A.weight", rank, m.cols, 1/math.Sqrt(float64(m.cols)))
		add("base_model.model."+m.name+".lora_B.weight", m.rows, rank, 1e-3)
	}
	f, err := os.Create(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return size, safetensors.Write(f, out, nil)
}
