package quant

import "fmt"

// Scheme is what config.json's quantization_config says about the stored
// weights: DeepSeek's FP8 blocks (quant_method fp8) or compressed-tensors'
// INT4 groups (format pack-quantized). The zero Scheme is unquantised.
type Scheme struct {
	Block [2]int // FP8 weight_block_size [rows, cols]; zero when not FP8
	Group int    // INT4 group size; 0 when not pack-quantized
}

// ConfigJSON is quantization_config as config.json spells it.
type ConfigJSON struct {
	QuantMethod     string `json:"quant_method"`
	Format          string `json:"format"`
	WeightBlockSize []int  `json:"weight_block_size"`
	ConfigGroups    map[string]struct {
		Weights *struct {
			NumBits   int    `json:"num_bits"`
			GroupSize int    `json:"group_size"`
			Symmetric bool   `json:"symmetric"`
			Type      string `json:"type"`
		} `json:"weights"`
	} `json:"config_groups"`
}

// Parse checks a quantization_config (nil: none) and returns its scheme.
func Parse(qc *ConfigJSON) (Scheme, error) {
	var q Scheme
	switch {
	case qc == nil:
		return q, nil
	case qc.QuantMethod == "fp8":
		if len(qc.WeightBlockSize) != 2 || qc.WeightBlockSize[0] < 1 || qc.WeightBlockSize[1] < 1 {
			return q, fmt.Errorf("fp8 without a weight_block_size of two positive numbers (got %v)", qc.WeightBlockSize)
		}
		q.Block = [2]int{qc.WeightBlockSize[0], qc.WeightBlockSize[1]}
	case qc.Format == "pack-quantized":
		for name, g := range qc.ConfigGroups {
			w := g.Weights
			if w == nil || w.NumBits != 4 || !w.Symmetric || w.GroupSize < 8 || w.GroupSize%8 != 0 || (w.Type != "" && w.Type != "int") {
				return q, fmt.Errorf("config group %s is not symmetric 4-bit integers in groups of a multiple of 8", name)
			}
			if q.Group != 0 && q.Group != w.GroupSize {
				return q, fmt.Errorf("config groups have group sizes %d and %d", q.Group, w.GroupSize)
			}
			q.Group = w.GroupSize
		}
		if q.Group == 0 {
			return q, fmt.Errorf("pack-quantized without config_groups")
		}
	default:
		return q, fmt.Errorf("quant_method %q format %q is not read: only fp8 (block) and compressed-tensors pack-quantized", qc.QuantMethod, qc.Format)
	}
	return q, nil
}

// FP8ScaleShape is the shape X.weight_scale_inv must have for a rows×cols
// FP8 weight.
func (q Scheme) FP8ScaleShape(rows, cols int) []int64 {
	return []int64{int64(ceilDiv(rows, q.Block[0])), int64(ceilDiv(cols, q.Block[1]))}
}

// Int4Shapes are the shapes X.weight_packed (I32) and X.weight_scale
// (BF16) must have for a rows×cols INT4 weight; ok is false when cols is
// not a whole number of groups.
func (q Scheme) Int4Shapes(rows, cols int) (packed, scale []int64, ok bool) {
	if rows < 1 || cols < 1 || q.Group < 1 || cols%q.Group != 0 {
		return nil, nil, false
	}
	return []int64{int64(rows), int64(cols / 8)}, []int64{int64(rows), int64(cols / q.Group)}, true
}
