package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/userfile"
)

// The released DeepSeek V3.1 and Kimi K2 checkpoints store their linear
// maps block-quantised: X.weight F8_E4M3 with X.weight_scale_inv F32, one
// scale per weight_block_size block (DeepSeek V3.1, Kimi K2), or X.weight_packed
// I32 (eight 4-bit integers a word) with X.weight_scale BF16 per group and
// X.weight_shape I32 [2] (compressed-tensors pack-quantized, Kimi K2.6's
// routed experts). They are dequantised on load with lib/quant, the
// decoders lib/export merges with, into the float32 or bfloat16 matrices
// the engine keeps (BF16Mode). A weight waits until its parts, which may
// sit in different shards, are all read; shapes are checked against the
// config before anything is allocated.

// quantSuffixes are the parts besides X.weight, in the order checked.
var quantSuffixes = []string{"_scale_inv", "_packed", "_scale", "_shape"}

// quantParts holds the parts of quantised weights not yet converted.
type quantParts struct {
	scheme quant.Scheme
	want   map[string][]int
	t      map[string]*safetensors.Tensor
	slab   *hugeSlab // where the matrices go (nil: the heap)
}

// readQuantScheme is config.json's quantization_config (or text_config's).
func readQuantScheme(dir string) (quant.Scheme, error) {
	b, err := userfile.ReadFile(filepath.Join(dir, "config.json"), maxConfigBytes)
	if err != nil {
		return quant.Scheme{}, fmt.Errorf("read model config: %w", err)
	}
	var c struct {
		Quant *quant.ConfigJSON `json:"quantization_config"`
		Text  *struct {
			Quant *quant.ConfigJSON `json:"quantization_config"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return quant.Scheme{}, fmt.Errorf("parse model config.json: %w", err)
	}
	if c.Quant == nil && c.Text != nil {
		c.Quant = c.Text.Quant
	}
	s, err := quant.Parse(c.Quant)
	if err != nil {
		return s, fmt.Errorf("model config.json quantization_config: %w", err)
	}
	return s, nil
}

// weightOf is the X.weight a quantised part belongs to ("" when st is not
// one): an FP8 weight itself, or one of its quantSuffixes.
func weightOf(st *safetensors.Tensor) string {
	if st.DType == safetensors.F8E4M3 {
		return st.Name
	}
	for _, s := range quantSuffixes {
		if w, ok := strings.CutSuffix(st.Name, s); ok && strings.HasSuffix(w, ".weight") {
			return w
		}
	}
	return ""
}

// add keeps a copy of st when it is part of a quantised weight the model
// uses, and converts that weight once its parts are all there.
func (q *quantParts) add(st *safetensors.Tensor, ts Tensors, keepBF16 bool) (bool, error) {
	if q == nil {
		return false, nil
	}
	w := weightOf(st)
	if w == "" {
		return false, nil
	}
	if _, ok := q.want[w]; !ok {
		return true, nil // a weight the engine does not use (DeepSeek's MTP layer)
	}
	c := *st
	c.Data = slices.Clone(st.Data)
	q.t[st.Name] = &c
	return true, q.tryConvert(w, ts, keepBF16)
}

// tryConvert dequantises weight w if its parts are complete.
func (q *quantParts) tryConvert(w string, ts Tensors, keepBF16 bool) error {
	var decode func(lo, n int, dst []float32) // rows [lo, lo+n) into dst
	var err error
	if wt, ok := q.t[w]; ok && wt.DType == safetensors.F8E4M3 {
		s, ok := q.t[w+"_scale_inv"]
		if !ok {
			return nil
		}
		decode, err = q.fp8(w, wt, s)
	} else {
		p, ok1 := q.t[w+"_packed"]
		s, ok2 := q.t[w+"_scale"]
		sh, ok3 := q.t[w+"_shape"]
		if !ok1 || !ok2 || !ok3 {
			return nil
		}
		decode, err = q.int4(w, p, s, sh)
	}
	if err != nil {
		return err
	}
	ts[w] = quantMatrix(q.want[w][0], q.want[w][1], keepBF16, q.slab, decode)
	for _, s := range append([]string{""}, quantSuffixes...) {
		delete(q.t, w+s)
	}
	return nil
}

// quantRows is how many rows quantMatrix dequantises at a time for a
// bfloat16 matrix: a float32 scratch of a few hundred KiB at most on the
// released shapes (7,168 columns), rather than the whole matrix.
const quantRows = 32

// quantMatrix is a rows×cols matrix from slab, float32 or rounded to
// bfloat16 per keepBF16, filled by decode.
func quantMatrix(rows, cols int, keepBF16 bool, slab *hugeSlab, decode func(lo, n int, dst []float32)) Tensor {
	if !keepBF16 {
		x := hugeSlabAlloc[float32](slab, rows*cols)
		decode(0, rows, x)
		return Tensor{Shape: []int{rows, cols}, Data: x}
	}
	bf := hugeSlabAlloc[uint16](slab, rows*cols)
	buf := make([]float32, min(rows, quantRows)*cols)
	for lo := 0; lo < rows; lo += quantRows {
		n := min(quantRows, rows-lo)
		decode(lo, n, buf[:n*cols])
		for i, v := range buf[:n*cols] {
			bf[lo*cols+i] = safetensors.Float32ToBF16(v)
		}
	}
	return Tensor{Shape: []int{rows, cols}, BF16: bf}
}

// fp8 checks an FP8 weight and its block scales and returns their
// dequantiser.
func (q *quantParts) fp8(w string, wt, s *safetensors.Tensor) (func(lo, n int, dst []float32), error) {
	shape := q.want[w]
	if q.scheme.Block[0] == 0 {
		return nil, fmt.Errorf("%s is FP8 but config.json has no quantization_config with quant_method fp8 and weight_block_size", w)
	}
	if len(shape) != 2 || !slices.Equal(wt.Shape, []int64{int64(shape[0]), int64(shape[1])}) {
		return nil, fmt.Errorf("FP8 weight %s has shape %v, want %v", w, wt.Shape, shape)
	}
	rows, cols := shape[0], shape[1]
	want := q.scheme.FP8ScaleShape(rows, cols)
	if s.DType != safetensors.F32 || !slices.Equal(s.Shape, want) || len(wt.Data) != rows*cols || len(s.Data) != 4*int(want[0]*want[1]) {
		return nil, fmt.Errorf("%s_scale_inv is %s %v, want F32 %v for %v blocks of %s", w, s.DType, s.Shape, want, q.scheme.Block, w)
	}
	return func(lo, n int, dst []float32) {
		quant.FP8Rows(wt.Data[lo*cols:], s.Data, cols, q.scheme.Block, lo, n, dst)
	}, nil
}

// int4 checks a packed INT4 weight and its group scales and returns their
// dequantiser.
func (q *quantParts) int4(w string, p, s, sh *safetensors.Tensor) (func(lo, n int, dst []float32), error) {
	shape := q.want[w]
	if q.scheme.Group == 0 {
		return nil, fmt.Errorf("%s_packed is INT4 but config.json has no compressed-tensors pack-quantized quantization_config", w)
	}
	if len(shape) != 2 || sh.DType != safetensors.I32 || !slices.Equal(sh.Shape, []int64{2}) || len(sh.Data) != 8 ||
		int32(binary.LittleEndian.Uint32(sh.Data)) != int32(shape[0]) || int32(binary.LittleEndian.Uint32(sh.Data[4:])) != int32(shape[1]) {
		return nil, fmt.Errorf("%s_shape is not I32 [2] holding the weight's shape %v", w, shape)
	}
	rows, cols := shape[0], shape[1]
	ps, ss, ok := q.scheme.Int4Shapes(rows, cols)
	if !ok || p.DType != safetensors.I32 || !slices.Equal(p.Shape, ps) || s.DType != safetensors.BF16 || !slices.Equal(s.Shape, ss) ||
		len(p.Data) != rows*cols/2 || len(s.Data) != 2*int(ss[0]*ss[1]) {
		return nil, fmt.Errorf("%s_packed %s %v and _scale %s %v do not fit %v in groups of %d", w, p.DType, p.Shape, s.DType, s.Shape, shape, q.scheme.Group)
	}
	return func(lo, n int, dst []float32) {
		quant.Int4Rows(p.Data[lo*cols/2:], s.Data, cols, q.scheme.Group, lo, n, dst)
	}, nil
}

// finish reports a quantised weight whose parts never all arrived.
func (q *quantParts) finish() error {
	if q == nil || len(q.t) == 0 {
		return nil
	}
	names := make([]string, 0, len(q.t))
	for n := range q.t {
		names = append(names, n)
	}
	slices.Sort(names)
	return fmt.Errorf("load weights: %s has no matching quantised weight or scales (need X.weight with X.weight_scale_inv, or X.weight_packed, _scale and _shape)", names[0])
}
