package tinkerproto

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/tinkershell/tinker/lib/tinkerproto/internal/pbref"
)

// A training request of 8 datums of 512 tokens with per-token targets and
// weights, encoded and decoded here and by protobuf-go.

func benchRequest() *ForwardBackwardRequest {
	toks := make([]int, 512)
	w := make([]float32, 512)
	m := &ForwardBackwardRequest{ModelId: "m", SeqId: 3, LossFn: "cross_entropy"}
	for i := 0; i < 8; i++ {
		m.Data = append(m.Data, &Datum{
			ModelInput: []*Chunk{{Chunk: &Chunk_EncodedText{&EncodedTextChunk{Tokens: PackInt32(toks)}}}},
			LossFnInputs: map[string]*Tensor{
				"target_tokens": {Encoding: &Tensor_Dense{PackInt32(toks)}, Dtype: DType_DTYPE_INT64, Shape: []int64{512}},
				"weights":       {Encoding: &Tensor_Dense{PackFloat32(w)}, Dtype: DType_DTYPE_FLOAT32, Shape: []int64{512}},
			},
		})
	}
	return m
}

func BenchmarkRequestOurs(b *testing.B) {
	m := benchRequest()
	for b.Loop() {
		buf, _ := Marshal(m)
		var back ForwardBackwardRequest
		if err := Unmarshal(buf, &back); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRequestProtobufGo(b *testing.B) {
	buf, _ := Marshal(benchRequest())
	var ref pb.ForwardBackwardRequest
	if err := proto.Unmarshal(buf, &ref); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		out, _ := proto.Marshal(&ref)
		var back pb.ForwardBackwardRequest
		if err := proto.Unmarshal(out, &back); err != nil {
			b.Fatal(err)
		}
	}
}
