package engine

import (
	"fmt"
	"slices"

	"github.com/tinkershell/tinker/lib/lazyre"
	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// A GPT-OSS checkpoint stores each layer's experts fused:
// mlp.experts.gate_up_proj [experts, hidden, 2·inter] with gate and up
// interleaved along the last axis (gate the even columns), and
// mlp.experts.down_proj [experts, inter, hidden], each with a _bias; the
// released checkpoints hold the two weights as MXFP4 instead:
// <name>_blocks [experts, rows, cols/32, 16] (two 4-bit E2M1 values a byte,
// the low nibble first) and <name>_scales [experts, rows, cols/32] (a
// power-of-two exponent biased by 127 per block of 32), rows being the
// outputs (2·inter interleaved, or hidden). They are converted on load to
// the per-expert matrices and biases the engine names (gptoss.go); every
// MXFP4 value times its power of two is exact in bfloat16 and float32.

// gptOssExpert matches one of those tensors: layer prefix, name, part.
var gptOssExpert = lazyre.New(`^(model\.layers\.\d+\.mlp\.experts\.)(gate_up_proj|down_proj)(|_bias|_blocks|_scales)$`)

// gptOssParts collects a checkpoint's fused expert tensors (blocks and
// scales may sit in different shards) until they convert.
type gptOssParts map[string]*safetensors.Tensor

// add keeps a copy of st when it is a fused GPT-OSS expert tensor.
func (g gptOssParts) add(st *safetensors.Tensor) bool {
	if !gptOssExpert.MatchString(st.Name) {
		return false
	}
	c := *st
	c.Data = slices.Clone(st.Data)
	g[st.Name] = &c
	return true
}

// convert turns the collected tensors into per-expert ones in ts.
func (g gptOssParts) convert(c Config, ts Tensors, keepBF16 bool) error {
	for name, t := range g {
		m := gptOssExpert.FindStringSubmatch(name)
		var err error
		switch m[3] {
		case "":
			err = g.dense(c, m[1], m[2], t, ts, keepBF16)
		case "_blocks":
			scales, ok := g[m[1]+m[2]+"_scales"]
			if !ok {
				return fmt.Errorf("gpt-oss weights: %s has no %s_scales", name, m[2])
			}
			err = g.mxfp4(c, m[1], m[2], t, scales, ts, keepBF16)
		case "_bias":
			err = splitBias(c, m[1], m[2], t, ts)
		}
		if err != nil {
			return fmt.Errorf("gpt-oss weights: %w", err)
		}
	}
	return nil
}

// dims are the fused tensor's output rows and input columns per expert.
func fusedDims(c Config, proj string) (rows, cols int) {
	if proj == "gate_up_proj" {
		return 2 * c.MoEIntermediate, c.Hidden
	}
	return c.Hidden, c.MoEIntermediate
}

// mxfp4 dequantises one fused tensor and splits it per expert.
func (g gptOssParts) mxfp4(c Config, p, proj string, blocks, scales *safetensors.Tensor, ts Tensors, keepBF16 bool) error {
	rows, cols := fusedDims(c, proj)
	want := []int64{int64(c.Experts), int64(rows), int64(cols / 32), 16}
	if cols%32 != 0 || !slices.Equal(blocks.Shape, want) || !slices.Equal(scales.Shape, want[:3]) ||
		blocks.DType != safetensors.U8 || scales.DType != safetensors.U8 {
		return fmt.Errorf("%s%s_blocks %s %v / _scales %s %v, want U8 %v and %v", p, proj, blocks.DType, blocks.Shape, scales.DType, scales.Shape, want, want[:3])
	}
	out := make([]float32, c.Experts*rows*cols)
	quant.MXFP4Decode(blocks.Data, scales.Data, out)
	splitRows(c, p, proj, out, rows, cols, ts, keepBF16)
	return nil
}

// dense splits an unquantised fused tensor ([experts, in, out]).
func (g gptOssParts) dense(c Config, p, proj string, t *safetensors.Tensor, ts Tensors, keepBF16 bool) error {
	rows, cols := fusedDims(c, proj)
	if !slices.Equal(t.Shape, []int64{int64(c.Experts), int64(cols), int64(rows)}) {
		return fmt.Errorf("%s%s has shape %v, want [%d %d %d]", p, proj, t.Shape, c.Experts, cols, rows)
	}
	in, err := t.Float32()
	if err != nil {
		return fmt.Errorf("%s%s: %w", p, proj, err)
	}
	out := make([]float32, len(in)) // transposed to [experts, out, in]
	for e := range c.Experts {
		for i := range cols {
			for o := range rows {
				out[(e*rows+o)*cols+i] = in[(e*cols+i)*rows+o]
			}
		}
	}
	splitRows(c, p, proj, out, rows, cols, ts, keepBF16)
	return nil
}

// splitRows stores [experts, rows, cols] output-major weights per expert:
// gate_up's even rows are the gate's, its odd rows the up projection's.
func splitRows(c Config, p, proj string, w []float32, rows, cols int, ts Tensors, keepBF16 bool) {
	for e := range c.Experts {
		x := w[e*rows*cols : (e+1)*rows*cols]
		if proj == "down_proj" {
			ts[expertName(p[:len(p)-len("mlp.experts.")], e, "down_proj")] = newMatrix(x, rows, cols, keepBF16)
			continue
		}
		gate, up := make([]float32, 0, rows/2*cols), make([]float32, 0, rows/2*cols)
		for r := 0; r < rows; r += 2 {
			gate = append(gate, x[r*cols:(r+1)*cols]...)
			up = append(up, x[(r+1)*cols:(r+2)*cols]...)
		}
		pre := p[:len(p)-len("mlp.experts.")]
		ts[expertName(pre, e, "gate_proj")] = newMatrix(gate, rows/2, cols, keepBF16)
		ts[expertName(pre, e, "up_proj")] = newMatrix(up, rows/2, cols, keepBF16)
	}
}

func newMatrix(x []float32, rows, cols int, keepBF16 bool) Tensor {
	if !keepBF16 {
		return Tensor{Shape: []int{rows, cols}, Data: x}
	}
	bf := make([]uint16, len(x))
	for i, v := range x {
		bf[i] = safetensors.Float32ToBF16(v)
	}
	return Tensor{Shape: []int{rows, cols}, BF16: bf}
}

// splitBias stores a fused bias ([experts, 2·inter] interleaved, or
// [experts, hidden]) per expert.
func splitBias(c Config, p, proj string, t *safetensors.Tensor, ts Tensors) error {
	rows, _ := fusedDims(c, proj)
	if !slices.Equal(t.Shape, []int64{int64(c.Experts), int64(rows)}) {
		return fmt.Errorf("%s%s_bias has shape %v, want [%d %d]", p, proj, t.Shape, c.Experts, rows)
	}
	b, err := t.Float32()
	if err != nil {
		return fmt.Errorf("%s%s_bias: %w", p, proj, err)
	}
	pre := p[:len(p)-len("mlp.experts.")]
	for e := range c.Experts {
		x := b[e*rows : (e+1)*rows]
		if proj == "down_proj" {
			ts[expertBias(pre, e, "down_proj")] = Tensor{Shape: []int{rows}, Data: x}
			continue
		}
		gate, up := make([]float32, rows/2), make([]float32, rows/2)
		for i := range gate {
			gate[i], up[i] = x[2*i], x[2*i+1]
		}
		ts[expertBias(pre, e, "gate_proj")] = Tensor{Shape: []int{rows / 2}, Data: gate}
		ts[expertBias(pre, e, "up_proj")] = Tensor{Shape: []int{rows / 2}, Data: up}
	}
	return nil
}
