package tinkerproto

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/tinkershell/tinker/lib/tinkerproto/internal/pbref"
)

// The codec is checked against protoc-gen-go's code for the same .proto
// (internal/pbref, linked only by tests): what this package encodes,
// protobuf-go decodes to the same message, and the other way round. The
// messages are random, with every field, oneof member, optional field and
// map of the schema's used part, and zero values among them.

func TestCodecMatchesProtobufGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		checkBothWays(t, randSampleResponse(rng), &pb.SampleResponse{}, &SampleResponse{})
		checkBothWays(t, randFwdBwdRequest(rng), &pb.ForwardBackwardRequest{}, &ForwardBackwardRequest{})
		checkBothWays(t, randFwdBwdOutput(rng), &pb.ForwardBackwardOutput{}, &ForwardBackwardOutput{})
	}
}

// checkBothWays encodes ours, decodes it with protobuf-go into ref,
// re-encodes that with protobuf-go and decodes it with ours into back; the
// three must hold the same message (compared as JSON of this package's
// types, so nil and empty slices are told apart where presence matters).
func checkBothWays(t *testing.T, ours Message, ref proto.Message, back Message) {
	t.Helper()
	b, _ := Marshal(ours)
	if err := proto.Unmarshal(b, ref); err != nil {
		t.Fatalf("protobuf-go cannot decode what we encode: %v\n% x", err, b)
	}
	b2, err := proto.MarshalOptions{Deterministic: true}.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := Unmarshal(b2, back); err != nil {
		t.Fatalf("we cannot decode what protobuf-go encodes: %v", err)
	}
	if got, want := dump(t, back), dump(t, ours); got != want {
		t.Fatalf("round trip through protobuf-go changed the message:\n got %s\nwant %s", got, want)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("encodings differ:\n ours % x\n  ref % x", b, b2)
	}
}

func dump(t *testing.T, m any) string {
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func randBytes(r *rand.Rand) []byte {
	if r.IntN(4) == 0 {
		return nil
	}
	b := make([]byte, r.IntN(12))
	if len(b) == 0 {
		return nil // proto3 cannot tell an empty field from an absent one
	}
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// randOptBytes is an optional bytes field: nil (absent), empty or not.
func randOptBytes(r *rand.Rand) []byte {
	if r.IntN(3) == 0 {
		return []byte{}
	}
	return randBytes(r)
}

func randStr(r *rand.Rand) string {
	return []string{"", "cross_entropy", "loss:sum", "héllo", "ArrayRecord"}[r.IntN(5)]
}

func randInt32(r *rand.Rand) int32 {
	return []int32{0, 1, -1, 300, math.MaxInt32, math.MinInt32}[r.IntN(6)]
}

func randInt64s(r *rand.Rand) []int64 {
	if r.IntN(3) == 0 {
		return nil
	}
	v := make([]int64, 1+r.IntN(4))
	for i := range v {
		v[i] = []int64{0, 7, -3, 1 << 40}[r.IntN(4)]
	}
	return v
}

func randDoubles(r *rand.Rand) map[string]float64 {
	if r.IntN(3) == 0 {
		return nil
	}
	m := map[string]float64{}
	for i := r.IntN(4); i > 0; i-- {
		m[randStr(r)] = []float64{0, 1.5, -2e-9, math.MaxFloat64}[r.IntN(4)]
	}
	return nilIfEmpty(m)
}

func randSampleResponse(r *rand.Rand) *SampleResponse {
	m := &SampleResponse{PromptLogprobs: randOptBytes(r), PromptCacheHitTokens: randInt32(r)}
	for i := r.IntN(3); i > 0; i-- {
		m.Sequences = append(m.Sequences, &SampledSequence{StopReason: StopReason(r.IntN(2)), Tokens: randBytes(r), Logprobs: randOptBytes(r)})
	}
	if r.IntN(2) == 0 {
		m.TopkPromptLogprobs = &TopkPromptLogprobs{TokenIds: randBytes(r), Logprobs: randBytes(r), K: uint32(r.IntN(3)), PromptLength: uint32(r.IntN(300))}
	}
	return m
}

func randFwdBwdRequest(r *rand.Rand) *ForwardBackwardRequest {
	m := &ForwardBackwardRequest{ModelId: randStr(r), SeqId: randInt32(r), LossFn: randStr(r), LossFnConfig: randDoubles(r), ForwardOnly: r.IntN(2) == 0}
	for i := r.IntN(3); i > 0; i-- {
		m.Data = append(m.Data, randDatum(r))
	}
	return m
}

func randDatum(r *rand.Rand) *Datum {
	d := &Datum{}
	for i := r.IntN(4); i > 0; i-- {
		c := &Chunk{}
		switch r.IntN(4) {
		case 0:
			c.Chunk = &Chunk_EncodedText{&EncodedTextChunk{Tokens: randBytes(r)}}
		case 1:
			img := &ImageChunk{Data: randBytes(r), Format: []string{"", "png", "jpeg"}[r.IntN(3)]}
			if r.IntN(2) == 0 {
				n := randInt32(r)
				img.ExpectedTokens = &n
			}
			c.Chunk = &Chunk_Image{img}
		case 2:
			c.Chunk = &Chunk_Dmel{&DmelChunk{Dmel: randBytes(r)}}
		}
		d.ModelInput = append(d.ModelInput, c)
	}
	if r.IntN(3) > 0 {
		d.LossFnInputs = map[string]*Tensor{}
		for i := r.IntN(3); i > 0; i-- {
			d.LossFnInputs[randStr(r)] = randTensor(r)
		}
		d.LossFnInputs = nilIfEmpty(d.LossFnInputs)
	}
	return d
}

func randTensor(r *rand.Rand) *Tensor {
	t := &Tensor{Dtype: DType(r.IntN(5)), Shape: randInt64s(r)}
	switch r.IntN(3) {
	case 0:
		t.Encoding = &Tensor_Dense{append([]byte{}, randBytes(r)...)} // a set oneof member is present even empty
	case 1:
		t.Encoding = &Tensor_SparseCsr{&SparseCsr{Values: randBytes(r), CrowIndices: randBytes(r), ColIndices: randBytes(r)}}
	}
	return t
}

func randFwdBwdOutput(r *rand.Rand) *ForwardBackwardOutput {
	m := &ForwardBackwardOutput{LossFnOutputType: randStr(r), Metrics: randDoubles(r)}
	for i := r.IntN(3); i > 0; i-- {
		rec := &ArrayRecord{TypeTag: randStr(r), NumDatums: int64(randInt32(r))}
		if r.IntN(3) > 0 {
			rec.Fields = map[string]*BatchedTensor{}
			for j := r.IntN(3); j > 0; j-- {
				rec.Fields[randStr(r)] = &BatchedTensor{Data: randBytes(r), Offsets: randBytes(r), Dtype: DType(r.IntN(5)), TrailingShape: randInt64s(r)}
			}
			rec.Fields = nilIfEmpty(rec.Fields)
		}
		m.LossFnOutputs = append(m.LossFnOutputs, rec)
	}
	return m
}

// TestDecodeLikeProtobufGo feeds both decoders the wire forms an encoder
// other than ours may send: unpacked repeated int64s, unknown fields of
// every wire type, a field repeated (the last scalar wins, messages merge),
// a known number with the wrong wire type; and malformed input, which both
// must refuse.
func TestDecodeLikeProtobufGo(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "first")
	b = protowire.AppendTag(b, 99, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 7)
	b = protowire.AppendTag(b, 98, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, 7)
	b = protowire.AppendTag(b, 97, protowire.VarintType)
	b = protowire.AppendVarint(b, 1<<60)
	b = protowire.AppendTag(b, 2, protowire.BytesType) // seq_id with the wrong type: unknown
	b = protowire.AppendBytes(b, []byte{1})
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, "second")
	var datum []byte
	var tensor []byte
	tensor = protowire.AppendTag(tensor, 4, protowire.VarintType) // shape unpacked
	tensor = protowire.AppendVarint(tensor, 3)
	tensor = protowire.AppendTag(tensor, 4, protowire.BytesType) // and packed
	tensor = protowire.AppendBytes(tensor, protowire.AppendVarint(protowire.AppendVarint(nil, 4), uint64(1<<64-5)))
	var entry []byte
	entry = protowire.AppendTag(entry, 2, protowire.BytesType) // value before key
	entry = protowire.AppendBytes(entry, tensor)
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendString(entry, "weights")
	datum = protowire.AppendTag(datum, 2, protowire.BytesType)
	datum = protowire.AppendBytes(datum, entry)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendBytes(b, datum)
	var ours ForwardBackwardRequest
	var ref pb.ForwardBackwardRequest
	if err := Unmarshal(b, &ours); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	refBytes, _ := proto.MarshalOptions{Deterministic: true}.Marshal(&ref)
	var back ForwardBackwardRequest
	if err := Unmarshal(refBytes, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, ours), dump(t, back); got != want {
		t.Fatalf("decoded differently from protobuf-go:\n ours %s\n  ref %s", got, want)
	}
	if ours.ModelId != "second" || len(ours.Data[0].LossFnInputs["weights"].Shape) != 3 || ours.Data[0].LossFnInputs["weights"].Shape[2] != -5 {
		t.Fatalf("decoded %s", dump(t, ours))
	}

	bad := map[string][]byte{
		"truncated varint":   {0x10, 0x80},
		"length past end":    {0x0a, 0x05, 'a'},
		"field number 0":     {0x00, 0x01},
		"unended group":      {0x0b},
		"invalid UTF-8":      {0x0a, 0x01, 0xff},
		"overlong varint":    {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"truncated fixed64":  {0x29, 1, 2, 3},
		"bad nested message": append([]byte{0x1a, 0x02}, 0x0a, 0x05),
	}
	for name, in := range bad {
		var m ForwardBackwardRequest
		if err := Unmarshal(in, &m); err == nil {
			t.Errorf("%s: accepted % x", name, in)
		}
		var r pb.ForwardBackwardRequest
		if err := proto.Unmarshal(in, &r); err == nil {
			t.Errorf("%s: protobuf-go accepts % x, so this case tests nothing", name, in)
		}
	}
}

func nilIfEmpty[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}

// FuzzDecodeMatchesProtobufGo: on any input, this package and protobuf-go
// agree on whether it is a valid ForwardBackwardRequest (what the server
// decodes from anyone), SampleResponse or ForwardBackwardOutput, and when
// it is, on its content.
func FuzzDecodeMatchesProtobufGo(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10; i++ {
		for _, m := range []Message{randFwdBwdRequest(rng), randSampleResponse(rng), randFwdBwdOutput(rng)} {
			b, _ := Marshal(m)
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeLikeProtobufGo(t, b, &ForwardBackwardRequest{}, &pb.ForwardBackwardRequest{})
		decodeLikeProtobufGo(t, b, &SampleResponse{}, &pb.SampleResponse{})
		decodeLikeProtobufGo(t, b, &ForwardBackwardOutput{}, &pb.ForwardBackwardOutput{})
	})
}

func decodeLikeProtobufGo(t *testing.T, b []byte, ours Message, ref proto.Message) {
	errOurs, errRef := Unmarshal(b, ours), proto.Unmarshal(b, ref)
	if (errOurs == nil) != (errRef == nil) {
		t.Fatalf("%T: ours: %v, protobuf-go: %v, on % x", ours, errOurs, errRef, b)
	}
	if errOurs != nil {
		return
	}
	// Equal messages encode to equal bytes (TestCodecMatchesProtobufGo),
	// which also compares NaNs bit for bit; protobuf-go keeps unknown
	// fields, this package skips them.
	dropUnknown(ref.ProtoReflect())
	refBytes, _ := proto.MarshalOptions{Deterministic: true}.Marshal(ref)
	if oursBytes, _ := Marshal(ours); !bytes.Equal(oursBytes, refBytes) {
		t.Fatalf("%T: decoded % x differently:\n ours % x\n  ref % x", ours, b, oursBytes, refBytes)
	}
}

// dropUnknown clears the unknown fields of m and of every message in it.
func dropUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				dropUnknown(mv.Message())
				return true
			})
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				dropUnknown(v.List().Get(i).Message())
			}
		case !fd.IsMap() && !fd.IsList() && fd.Message() != nil:
			dropUnknown(v.Message())
		}
		return true
	})
}
