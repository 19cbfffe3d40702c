package export

import (
	"context"
	"io"
	"os"
)

// MXFP4 requantisation, as transformers' quantize_to_mxfp4 does it
// (quant.MXFP4Encode says how a block is rounded). A block the update
// leaves unchanged (every merged value equal to the base's) keeps its
// bytes: requantising can pick a smaller scale for the same values, and an
// unadapted expert must stay as released.

// requantMXFP4 writes one adapted blocks tensor: each expert dequantised,
// updated in float32, requantised, a strip of 32 inputs at a time on every
// core (mxfp4_strips.go) while the expert before is written; its new
// scales wait in m.mxFresh for the scales tensor, which sorts after it in
// the same shard.
func (m *merger) requantMXFP4(ctx context.Context, f *os.File, s source, w io.Writer) error {
	j := s.mx
	x, err := newMXExperts(m.base.Dir, f, s)
	if err != nil {
		return err
	}
	defer x.close()
	per := j.rows * j.cols
	fresh := make([]byte, j.experts*per/32)
	make1 := func(e int, dst []byte) ([]byte, error) {
		if err := x.load(e); err != nil {
			return nil, err
		}
		sc := fresh[e*per/32 : (e+1)*per/32]
		x.run(0, j.cols/32, func(p mxPiece, v, d []float32) { x.requantStrip(p, v, d, dst, sc) })
		return dst[:per/2], nil
	}
	if err := m.pipeline(ctx, j.experts, 1, per/2, make1, w); err != nil {
		return err
	}
	m.mxFresh[j.scales.Name] = fresh
	return nil
}
