package export

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// The released GPT-OSS checkpoints store each layer's two expert weights
// as MXFP4: <name>_blocks [experts, out, in/32, 16] (two 4-bit E2M1 codes
// a byte, the low nibble first) and <name>_scales [experts, out, in/32]
// (a power-of-two exponent biased by 127 per block of 32 values). With
// --dtype bfloat16/float32 the merge dequantises them an expert at a time,
// adds the update in float32 and writes the dense parameter transformers
// loads, <name> [experts, in, out], rounding once; config.json loses its
// quantization_config. By default (--dtype same) an adapted weight is
// requantised instead (mxfp4_quant.go) and an unadapted one copied as it
// is, so the output is MXFP4 as released. Memory stays one expert's
// matrix in float32 plus the adapter (and a tensor's new scales).

// mxJob is one MXFP4 weight to dequantise into the dense tensor out.
type mxJob struct {
	out                 string
	blocks, scales      safetensors.TensorInfo // as stored
	shard, scaleShard   string                 // holding the blocks, the scales
	scaleOff            int64
	experts, rows, cols int  // rows: outputs, cols: inputs (as stored)
	requant             bool // written MXFP4 again, not dense
}

// planMXFP4 finds a GPT-OSS base's MXFP4 weights and replaces them in
// infos by the dense tensors the merge writes.
func (m *merger) planMXFP4(infos map[string]safetensors.TensorInfo) error {
	if m.base.Config.Family != models.GptOss {
		return nil
	}
	for name, t := range infos {
		out, ok := strings.CutSuffix(name, "_blocks")
		if !ok {
			continue
		}
		j, err := m.mxfp4Job(out, t, infos)
		if err != nil {
			return err
		}
		if m.mx == nil {
			m.mx, m.mxScales = map[string]*mxJob{}, map[string]bool{}
		}
		m.mx[name], m.mxScales[out+"_scales"] = j, true
		delete(infos, name)
		delete(infos, out+"_scales")
		infos[out] = safetensors.TensorInfo{Name: out, DType: safetensors.BF16, Shape: []int64{int64(j.experts), int64(j.cols), int64(j.rows)}}
	}
	return nil
}

// mxfp4Job checks one blocks tensor and its scales, and finds the scales.
func (m *merger) mxfp4Job(out string, t safetensors.TensorInfo, infos map[string]safetensors.TensorInfo) (*mxJob, error) {
	s, ok := infos[out+"_scales"]
	if !ok || len(t.Shape) != 4 || t.Shape[3] != 16 || t.DType != safetensors.U8 || s.DType != safetensors.U8 ||
		len(s.Shape) != 3 || s.Shape[0] != t.Shape[0] || s.Shape[1] != t.Shape[1] || s.Shape[2] != t.Shape[2] {
		return nil, fmt.Errorf("base %s: %s_blocks %v and %s_scales %v are not an MXFP4 pair", m.base.Dir, out, t.Shape, out, s.Shape)
	}
	j := &mxJob{out: out, blocks: t, scales: s, experts: int(t.Shape[0]), rows: int(t.Shape[1]), cols: int(t.Shape[2]) * 32}
	for _, shard := range m.base.Shards {
		h, err := readShardHeader(filepath.Join(m.base.Dir, shard))
		if err != nil {
			return nil, err
		}
		for i, x := range h.Tensors {
			switch x.Name {
			case out + "_scales":
				j.scaleShard, j.scaleOff = shard, h.Offsets[i]
			case out + "_blocks":
				j.shard = shard
			}
		}
	}
	if j.scaleShard == "" {
		return nil, fmt.Errorf("base %s: no shard holds %s_scales", m.base.Dir, out)
	}
	return j, nil
}

// settleMXFP4 decides, once the updates are known, what each MXFP4
// weight becomes: dense (a --dtype given), requantised (adapted) or
// copied (neither). infos gets the stored tensors back for the last two.
func (m *merger) settleMXFP4(infos map[string]safetensors.TensorInfo) error {
	if m.dtype != "" {
		return nil
	}
	for name, j := range m.mx {
		delete(infos, j.out)
		infos[j.blocks.Name], infos[j.scales.Name] = j.blocks, j.scales
		delete(m.mxScales, j.scales.Name)
		if m.updates[j.out] == nil {
			delete(m.mx, name)
			continue
		}
		if j.shard != j.scaleShard { // its new scales are written after it, from memory
			return fmt.Errorf("base %s keeps %s and %s in different shards: export with --dtype bfloat16", m.base.Dir, j.blocks.Name, j.scales.Name)
		}
		j.requant = true
		if m.mxFresh == nil {
			m.mxFresh = map[string][]byte{}
		}
		m.mxFresh[j.scales.Name] = nil // until its blocks are written
	}
	return nil
}

// dequantisesMXFP4 says whether MXFP4 weights are written dense.
func (m *merger) dequantisesMXFP4() bool { return len(m.mx) > 0 && m.dtype != "" }

// fillMXFP4 writes one dequantised, updated dense tensor: rows of the
// output are the inputs (transformers' layout), made a strip of 32 at a
// time on every core (mxfp4_strips.go) while the block before is written.
func (m *merger) fillMXFP4(ctx context.Context, f *os.File, s source, t safetensors.TensorInfo, w io.Writer) error {
	j := s.mx
	x, err := newMXExperts(m.base.Dir, f, s)
	if err != nil {
		return err
	}
	defer x.close()
	osz, total := j.rows*t.DType.Size(), j.experts*j.cols
	step := max(32, blockElems/j.rows/32*32) // output rows a block: whole strips
	make1 := func(lo int, dst []byte) ([]byte, error) {
		n := min(step, total-lo)
		for a := lo; a < lo+n; { // the block's part in each expert
			e := a / j.cols
			b := min(lo+n, (e+1)*j.cols)
			if err := x.load(e); err != nil {
				return nil, err
			}
			c0, part := a%j.cols/32, dst[(a-lo)*osz:]
			x.run(c0, (b-a)/32, func(p mxPiece, v, d []float32) { x.denseStrip(p, v, d, t.DType, part[32*(p.c-c0)*osz:]) })
			a = b
		}
		return dst[:n*osz], nil
	}
	return m.pipeline(ctx, total, step, step*osz, make1, w)
}
