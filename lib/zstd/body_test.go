package zstd

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// fwdBody is a realistic forward_backward body: datums of Zipf-drawn
// token ids (little-endian int32, as the SDK sends them), shifted target
// tokens and float32 weights that are 0 over the prompt and 1 after.
func fwdBody(t testing.TB, seed uint64, datums, tokens int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.1, 4, 151000)
	req := &tinkerproto.ForwardBackwardRequest{ModelId: "m-1", SeqId: 7, LossFn: "cross_entropy"}
	for range datums {
		ids := make([]uint32, tokens+1)
		for i := range ids {
			ids[i] = uint32(z.Uint64())
		}
		in, target, w := le32(ids[:tokens]), le32(ids[1:]), make([]uint32, tokens)
		prompt := r.IntN(tokens / 2)
		for i := prompt; i < tokens; i++ {
			w[i] = math.Float32bits(1)
		}
		req.Data = append(req.Data, &tinkerproto.Datum{
			ModelInput: []*tinkerproto.Chunk{{Chunk: &tinkerproto.Chunk_EncodedText{EncodedText: &tinkerproto.EncodedTextChunk{Tokens: in}}}},
			LossFnInputs: map[string]*tinkerproto.Tensor{
				"target_tokens": {Encoding: &tinkerproto.Tensor_Dense{Dense: target}, Dtype: tinkerproto.DType_DTYPE_INT32, Shape: []int64{int64(tokens)}},
				"weights":       {Encoding: &tinkerproto.Tensor_Dense{Dense: le32(w)}, Dtype: tinkerproto.DType_DTYPE_FLOAT32, Shape: []int64{int64(tokens)}},
			}})
	}
	b, err := tinkerproto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func le32(v []uint32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, x)
	}
	return b
}
