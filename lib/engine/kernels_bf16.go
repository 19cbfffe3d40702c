package engine

import (
	"math"
	"sync"
)

// The bf16 compute path (opt-in, LoadOptions.BF16Compute): products with
// bfloat16 weights round their activations to bfloat16 and accumulate
// the exact bf16×bf16 products in float32, as PyTorch's bf16 path
// (oneDNN) does, on AMX tiles or AVX512-BF16. Each output element is one
// float32 accumulator adding its column pairs in ascending order from
// zero, so a row's bits do not depend on its batch, its tile or the
// thread count; the path is chosen per matrix (every product of a bf16
// matrix takes it once enabled), never by batch size, so prefill and
// decode agree. Its results differ from the float32 path's at bf16
// precision, hence opt-in.

// BF16ComputeAvailable reports whether this CPU runs the bf16 path
// (LoadOptions.BF16Compute).
func BF16ComputeAvailable() bool { return bf16Compute() }

// bf16KVCache is a sequence's keys and values as the bf16 path's
// attention reads them (kernels_bf16_attn_amd64.go), per layer and KV
// head; positions [0, n[layer]) are packed.
type bf16KVCache struct {
	kv [][]bf16KV
	n  []int
}

// bf16KV is one layer's keys and values of one KV head in bfloat16, room
// for ldk keys (a multiple of 32) from key 0: k in VNNI blocks of 16 keys
// (the scores' weights), vt the values transposed, in VNNI blocks of 16
// dimensions over key pairs, blocks 16·ldk apart (the outputs' weights).
type bf16KV struct {
	k, vt []uint16
	ldk   int
}

// roundBF16 rounds f to the nearest bfloat16, ties to even, as
// VCVTNE2PS2BF16 does: a denormal becomes zero (the kernels treat
// bfloat16 denormals as zero anyway), a NaN a quiet NaN.
func roundBF16(f float32) uint16 {
	u := math.Float32bits(f)
	switch {
	case u&0x7fffffff > 0x7f800000:
		return uint16(u>>16) | 0x40
	case u&0x7f800000 == 0:
		return uint16(u>>16) & 0x8000
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// bf16Cols is n rounded up to the kernels' 32-column chunk.
func bf16Cols(n int) int { return (n + 31) &^ 31 }

// packVNNI lays out a bfloat16 matrix for the kernels: blocks of 16 rows
// (the last zero-padded), each holding, for each column pair p, the 16
// rows' (w[2p], w[2p+1]) in 64 bytes; columns are zero-padded to a
// multiple of 32.
func packVNNI(w mat) []uint16 {
	vn := make([]uint16, (w.rows+15)/16*16*bf16Cols(w.cols))
	packVNNIInto(vn, w.bf, w.rows, w.cols)
	return vn
}

// packVNNIInto is packVNNI of the rows × cols matrix src into dst (zeroed
// by the caller where it pads).
func packVNNIInto(dst, src []uint16, rows, cols int) {
	kp := bf16Cols(cols)
	for r := range rows {
		blk := dst[r/16*16*kp:]
		for k, v := range src[r*cols : (r+1)*cols] {
			blk[k/2*32+(r%16)*2+k&1] = v
		}
	}
}

// withBF16Compute replaces every bfloat16 matrix of ws by its packed copy
// (parallel over matrices: the 0.6B model has 197): every product of the
// bf16 path reads that one, the transposed ones too (packPanelT), so the
// row-major copy would only double the memory. The embedding, read by
// rows, keeps its own (a tied lm_head's packed copy is a second one).
func (ws *weights) withBF16Compute() {
	var ms []*mat
	for i := range ws.layers {
		l := &ws.layers[i]
		ms = append(ms, &l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down)
		if l.moe != nil { // the router stays float32: routing is float64
			for e := range l.moe.experts {
				x := &l.moe.experts[e]
				ms = append(ms, &x.gate, &x.up, &x.down)
			}
		}
	}
	ms = append(ms, &ws.lmHead) // the embedding is only read by rows
	// The packed copies are what decoding streams: in huge pages, as
	// loading puts the matrices (hugeSlab), allocated here in turn and
	// packed in parallel.
	var slab hugeSlab
	var wg sync.WaitGroup
	for _, m := range ms {
		if m.bf != nil && m.vn == nil {
			vn := hugeSlabAlloc[uint16](&slab, (m.rows+15)/16*16*bf16Cols(m.cols))
			wg.Go(func() { packVNNIInto(vn, m.bf, m.rows, m.cols); m.vn, m.bf = vn, nil })
		}
	}
	wg.Wait()
}
