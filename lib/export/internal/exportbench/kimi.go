package main

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/safetensors"
)

// The Kimi K2 model (-model kimi): deepseek.go's shapes as Kimi K2 Thinking
// ships them, the routed experts in compressed-tensors INT4 (eight signed
// 4-bit codes an int32, a bfloat16 scale per group of 32 columns, the
// matrix's shape beside) and everything else in bfloat16: about 1.7 GB in
// six shards. The adapter is deepseek.go's; the merge requantises the
// experts it adapts.
const kimiGroup = 32

// kimiTensors lists the stored tensors: INT4 experts with their scales
// and shapes, the rest bfloat16.
func kimiTensors() []safetensors.TensorInfo {
	return dsLayout(func(t dsTensor) []safetensors.TensorInfo {
		if !strings.Contains(t.name, ".experts.") {
			return []safetensors.TensorInfo{bf16Info(t.name+".weight", int64(t.rows), int64(t.cols))}
		}
		return []safetensors.TensorInfo{{Name: t.name + ".weight_packed", DType: safetensors.I32, Shape: []int64{int64(t.rows), int64(t.cols / 8)}},
			bf16Info(t.name+".weight_scale", int64(t.rows), int64(t.cols/kimiGroup)),
			{Name: t.name + ".weight_shape", DType: safetensors.I32, Shape: []int64{2}}}
	})
}

// writeKimiBase writes config.json, the shards and their index.
func writeKimiBase(dir string) (total, largest int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	cfg := dsConfig("kimi_k2", map[string]any{"quant_method": "compressed-tensors", "format": "pack-quantized",
		"config_groups": map[string]any{"group_0": map[string]any{"targets": []string{"Linear"},
			"weights": map[string]any{"num_bits": 4, "group_size": kimiGroup, "symmetric": true, "type": "int", "strategy": "group"}}}})
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return 0, 0, err
	}
	return writeShardsOf(dir, dsShards, companionSplit(kimiTensors()), writeKimiTyped, rand.New(rand.NewPCG(9, 10)))
}

// writeKimiTyped writes random packed codes, scales near 1e-3, each INT4
// weight's true shape, and bfloat16 around 0.02.
func writeKimiTyped(path string, ts []safetensors.TensorInfo, r *rand.Rand) (int64, error) {
	return writeLayout(path, ts, func(t safetensors.TensorInfo, w io.Writer, buf []byte) error {
		switch {
		case strings.HasSuffix(t.Name, "_shape"):
			rows, cols := uint32(dsMoEInter), uint32(dsHidden)
			if strings.Contains(t.Name, "down_proj") {
				rows, cols = cols, rows
			}
			_, err := w.Write(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, rows), cols))
			return err
		case strings.HasSuffix(t.Name, "_packed"):
			return randomBytes(w, t.Bytes(), r, buf)
		case strings.HasSuffix(t.Name, "_scale"):
			return randomBF16Around(w, t.Bytes(), 1e-3, r, buf)
		}
		return randomBF16(w, t.Bytes(), 0.02, r, buf)
	})
}

func randomBytes(w io.Writer, n int64, r *rand.Rand, buf []byte) error {
	return randomFixed(w, n, r, buf, func([]byte) {})
}

// randomFixed writes n random bytes in chunks of buf, each chunk passed to
// fix before it is written.
func randomFixed(w io.Writer, n int64, r *rand.Rand, buf []byte, fix func([]byte)) error {
	for n > 0 {
		c := min(n, int64(len(buf)))
		for i := int64(0); i < c; i += 8 {
			binary.LittleEndian.PutUint64(buf[i:], r.Uint64())
		}
		fix(buf[:c])
		if _, err := w.Write(buf[:c]); err != nil {
			return err
		}
		n -= c
	}
	return nil
}

// randomBF16Around writes positive bfloat16 values within half of m.
func randomBF16Around(w io.Writer, n int64, m float64, r *rand.Rand, buf []byte) error {
	for n > 0 {
		c := min(n, int64(len(buf)))
		for i := int64(0); i < c; i += 2 {
			binary.LittleEndian.PutUint16(buf[i:], safetensors.Float32ToBF16(float32(m*(0.5+r.Float64()))))
		}
		if _, err := w.Write(buf[:c]); err != nil {
			return err
		}
		n -= c
	}
	return nil
}
