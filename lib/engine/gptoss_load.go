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

// convert turns the collected tensors into per-expert ones in ts, the
// matrices carved from slab (hugeSlab; nil: the heap).
func (g gptOssParts) convert(c Config, ts Tensors, keepBF16 bool, slab *hugeSlab) error {
	for name, t := range g {
		m := gptOssExpert.FindStringSubmatch(name)
		var err error
		switch m[3] {
		case "":
			err = g.dense(c, m[1], m[2], t, ts, keepBF16, slab)
		case "_blocks":
			scales, ok := g[m[1]+m[2]+"_scales"]
			if !ok {
				return fmt.Errorf("gpt-oss weights: %s has no %s_scales", name, m[2])
			}
			err = g.mxfp4(c, m[1], m[2], t, scales, ts, keepBF16, slab)
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

// mxfp4 dequantises one fused tensor and splits it per expert, a row
// at a time straight into the expert's matrix.
func (g gptOssParts) mxfp4(c Config, p, proj string, blocks, scales *safetensors.Tensor, ts Tensors, keepBF16 bool, slab *hugeSlab) error {
	rows, cols := fusedDims(c, proj)
	want := []int64{int64(c.Experts), int64(rows), int64(cols / 32), 16}
	if cols%32 != 0 || !slices.Equal(blocks.Shape, want) || !slices.Equal(scales.Shape, want[:3]) ||
		blocks.DType != safetensors.U8 || scales.DType != safetensors.U8 {
		return fmt.Errorf("%s%s_blocks %s %v / _scales %s %v, want U8 %v and %v", p, proj, blocks.DType, blocks.Shape, scales.DType, scales.Shape, want, want[:3])
	}
	groups := cols / 32
	x := newExpertRows(c, p, proj, rows, cols, ts, keepBF16, slab)
	for e := range c.Experts {
		for o := range rows {
			i := (e*rows + o) * groups
			v := x.row(e, o)
			quant.MXFP4Decode(blocks.Data[16*i:16*(i+groups)], scales.Data[i:i+groups], v)
			x.store(e, o, v)
		}
	}
	return nil
}

// dense splits an unquantised fused tensor ([experts, in, out]).
func (g gptOssParts) dense(c Config, p, proj string, t *safetensors.Tensor, ts Tensors, keepBF16 bool, slab *hugeSlab) error {
	rows, cols := fusedDims(c, proj)
	if !slices.Equal(t.Shape, []int64{int64(c.Experts), int64(cols), int64(rows)}) {
		return fmt.Errorf("%s%s has shape %v, want [%d %d %d]", p, proj, t.Shape, c.Experts, cols, rows)
	}
	in, err := t.Float32()
	if err != nil {
		return fmt.Errorf("%s%s: %w", p, proj, err)
	}
	x := newExpertRows(c, p, proj, rows, cols, ts, keepBF16, slab)
	for e := range c.Experts {
		for o := range rows { // transposed to output rows
			v := x.row(e, o)
			for i := range v {
				v[i] = in[(e*cols+i)*rows+o]
			}
			x.store(e, o, v)
		}
	}
	return nil
}

// expertRows are the per-expert matrices one fused tensor of [experts,
// rows, cols] output-major weights fills, carved from a hugeSlab as the
// loader carves every matrix the decode reads, and set in ts: gate_up's
// even rows are the gate's, its odd rows the up projection's. Rows are
// written one at a time (row, then store), so that no output-major copy
// of the whole fused tensor is made on the way.
type expertRows struct {
	down    bool
	cols    int
	f32     [][]float32 // per expert (down) or gate, up per expert; nil when bfloat16
	bf      [][]uint16
	rowTemp []float32 // a bfloat16 row before rounding
}

func newExpertRows(c Config, p, proj string, rows, cols int, ts Tensors, keepBF16 bool, slab *hugeSlab) *expertRows {
	x := &expertRows{down: proj == "down_proj", cols: cols}
	pre := p[:len(p)-len("mlp.experts.")]
	if keepBF16 {
		x.rowTemp = make([]float32, cols)
	}
	for e := range c.Experts {
		names := []string{"gate_proj", "up_proj"}
		r := rows / 2
		if x.down {
			names, r = []string{"down_proj"}, rows
		}
		for _, n := range names {
			t := Tensor{Shape: []int{r, cols}}
			if keepBF16 {
				t.BF16 = hugeSlabAlloc[uint16](slab, r*cols)
				x.bf = append(x.bf, t.BF16)
			} else {
				t.Data = hugeSlabAlloc[float32](slab, r*cols)
				x.f32 = append(x.f32, t.Data)
			}
			ts[expertName(pre, e, n)] = t
		}
	}
	return x
}

// at is which matrix and which of its rows row o of expert e is.
func (x *expertRows) at(e, o int) (m, r int) {
	if x.down {
		return e, o
	}
	return 2*e + o%2, o / 2
}

// row is where row o of expert e is to be written in float32.
func (x *expertRows) row(e, o int) []float32 {
	if x.rowTemp != nil {
		return x.rowTemp
	}
	m, r := x.at(e, o)
	return x.f32[m][r*x.cols : (r+1)*x.cols]
}

// store keeps row o of expert e, written to row's slice as v: in place
// in float32, rounded to bfloat16 otherwise.
func (x *expertRows) store(e, o int, v []float32) {
	if x.rowTemp == nil {
		return
	}
	m, r := x.at(e, o)
	dst := x.bf[m][r*x.cols : (r+1)*x.cols]
	for i, f := range v {
		dst[i] = safetensors.Float32ToBF16(f)
	}
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
