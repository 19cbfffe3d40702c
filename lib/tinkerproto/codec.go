package tinkerproto

import (
	"maps"
	"math"
	"slices"
)

// Each message appends its fields in field-number order, leaves out
// proto3 zero values (but not set optional or oneof fields), and merges
// fields read from the wire as protobuf does: the last scalar wins,
// repeated fields and maps accumulate, a message field read twice merges.

func (x *SampleResponse) reset() { *x = SampleResponse{} }

func (x *SampleResponse) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	for _, s := range x.Sequences {
		b = appendMessageField(b, 1, s.appendTo)
	}
	if x.PromptLogprobs != nil {
		b = appendBytesField(b, 2, x.PromptLogprobs)
	}
	if x.TopkPromptLogprobs != nil {
		b = appendMessageField(b, 3, x.TopkPromptLogprobs.appendTo)
	}
	if x.PromptCacheHitTokens != 0 {
		b = appendVarintField(b, 4, uint64(int64(x.PromptCacheHitTokens)))
	}
	return b
}

func (x *SampleResponse) merge(b []byte) error {
	return fields(b, func(fl field) error {
		switch {
		case fl.is(1, wireBytes):
			s := &SampledSequence{}
			x.Sequences = append(x.Sequences, s)
			return s.merge(fl.b)
		case fl.is(2, wireBytes):
			x.PromptLogprobs = fl.bytes()
		case fl.is(3, wireBytes):
			if x.TopkPromptLogprobs == nil {
				x.TopkPromptLogprobs = &TopkPromptLogprobs{}
			}
			return x.TopkPromptLogprobs.merge(fl.b)
		case fl.is(4, wireVarint):
			x.PromptCacheHitTokens = int32(fl.u)
		}
		return nil
	})
}

func (x *SampledSequence) reset() { *x = SampledSequence{} }

func (x *SampledSequence) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	if x.StopReason != 0 {
		b = appendVarintField(b, 1, uint64(int64(x.StopReason)))
	}
	if len(x.Tokens) > 0 {
		b = appendBytesField(b, 2, x.Tokens)
	}
	if x.Logprobs != nil {
		b = appendBytesField(b, 3, x.Logprobs)
	}
	return b
}

func (x *SampledSequence) merge(b []byte) error {
	return fields(b, func(fl field) error {
		switch {
		case fl.is(1, wireVarint):
			x.StopReason = StopReason(int32(fl.u))
		case fl.is(2, wireBytes):
			x.Tokens = fl.bytes()
		case fl.is(3, wireBytes):
			x.Logprobs = fl.bytes()
		}
		return nil
	})
}

func (x *TopkPromptLogprobs) reset() { *x = TopkPromptLogprobs{} }

func (x *TopkPromptLogprobs) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	if len(x.TokenIds) > 0 {
		b = appendBytesField(b, 1, x.TokenIds)
	}
	if len(x.Logprobs) > 0 {
		b = appendBytesField(b, 2, x.Logprobs)
	}
	if x.K != 0 {
		b = appendVarintField(b, 3, uint64(x.K))
	}
	if x.PromptLength != 0 {
		b = appendVarintField(b, 4, uint64(x.PromptLength))
	}
	return b
}

func (x *TopkPromptLogprobs) merge(b []byte) error {
	return fields(b, func(fl field) error {
		switch {
		case fl.is(1, wireBytes):
			x.TokenIds = fl.bytes()
		case fl.is(2, wireBytes):
			x.Logprobs = fl.bytes()
		case fl.is(3, wireVarint):
			x.K = uint32(fl.u)
		case fl.is(4, wireVarint):
			x.PromptLength = uint32(fl.u)
		}
		return nil
	})
}

func (x *ForwardBackwardRequest) reset() { *x = ForwardBackwardRequest{} }

func (x *ForwardBackwardRequest) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	if x.ModelId != "" {
		b = appendStringField(b, 1, x.ModelId)
	}
	if x.SeqId != 0 {
		b = appendVarintField(b, 2, uint64(int64(x.SeqId)))
	}
	for _, d := range x.Data {
		b = appendMessageField(b, 3, d.appendTo)
	}
	if x.LossFn != "" {
		b = appendStringField(b, 4, x.LossFn)
	}
	b = appendDoubleMap(b, 5, x.LossFnConfig)
	if x.ForwardOnly {
		b = appendVarintField(b, 6, 1)
	}
	return b
}

func (x *ForwardBackwardRequest) merge(b []byte) error {
	return fields(b, func(fl field) (err error) {
		switch {
		case fl.is(1, wireBytes):
			x.ModelId, err = fl.str("tinker_public.ForwardBackwardRequest.model_id")
		case fl.is(2, wireVarint):
			x.SeqId = int32(fl.u)
		case fl.is(3, wireBytes):
			d := &Datum{}
			x.Data = append(x.Data, d)
			err = d.merge(fl.b)
		case fl.is(4, wireBytes):
			x.LossFn, err = fl.str("tinker_public.ForwardBackwardRequest.loss_fn")
		case fl.is(5, wireBytes):
			x.LossFnConfig, err = mergeDoubleMap(x.LossFnConfig, fl.b, "tinker_public.ForwardBackwardRequest.loss_fn_config")
		case fl.is(6, wireVarint):
			x.ForwardOnly = fl.u != 0
		}
		return err
	})
}

func (x *Datum) reset() { *x = Datum{} }

func (x *Datum) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	for _, c := range x.ModelInput {
		b = appendMessageField(b, 1, c.appendTo)
	}
	for _, k := range slices.Sorted(maps.Keys(x.LossFnInputs)) {
		t := x.LossFnInputs[k]
		b = appendMessageField(b, 2, func(b []byte) []byte {
			b = appendStringField(b, 1, k)
			return appendMessageField(b, 2, t.appendTo)
		})
	}
	return b
}

func (x *Datum) merge(b []byte) error {
	return fields(b, func(fl field) error {
		switch {
		case fl.is(1, wireBytes):
			c := &Chunk{}
			x.ModelInput = append(x.ModelInput, c)
			return c.merge(fl.b)
		case fl.is(2, wireBytes):
			k, v, ok, err := mapEntry(fl.b, "tinker_public.Datum.LossFnInputsEntry.key", wireBytes)
			if err != nil {
				return err
			}
			t := &Tensor{}
			if ok {
				if err := t.merge(v.b); err != nil {
					return err
				}
			}
			if x.LossFnInputs == nil {
				x.LossFnInputs = map[string]*Tensor{}
			}
			x.LossFnInputs[k] = t
		}
		return nil
	})
}

func (x *Chunk) reset() { *x = Chunk{} }

func (x *Chunk) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	switch c := x.Chunk.(type) {
	case *Chunk_EncodedText:
		b = appendMessageField(b, 1, c.EncodedText.appendTo)
	case *Chunk_Image:
		b = appendMessageField(b, 2, c.Image.appendTo)
	case *Chunk_Dmel:
		b = appendMessageField(b, 3, c.Dmel.appendTo)
	}
	return b
}

func (x *Chunk) merge(b []byte) error {
	return fields(b, func(fl field) error {
		switch {
		case fl.is(1, wireBytes):
			c, ok := x.Chunk.(*Chunk_EncodedText)
			if !ok {
				c = &Chunk_EncodedText{&EncodedTextChunk{}}
				x.Chunk = c
			}
			return c.EncodedText.merge(fl.b)
		case fl.is(2, wireBytes):
			c, ok := x.Chunk.(*Chunk_Image)
			if !ok {
				c = &Chunk_Image{&ImageChunk{}}
				x.Chunk = c
			}
			return c.Image.merge(fl.b)
		case fl.is(3, wireBytes):
			c, ok := x.Chunk.(*Chunk_Dmel)
			if !ok {
				c = &Chunk_Dmel{&DmelChunk{}}
				x.Chunk = c
			}
			return c.Dmel.merge(fl.b)
		}
		return nil
	})
}

// A nil oneof member encodes as an empty message, as protobuf-go does.

func (x *EncodedTextChunk) appendTo(b []byte) []byte {
	if x != nil && len(x.Tokens) > 0 {
		b = appendBytesField(b, 1, x.Tokens)
	}
	return b
}

func (x *EncodedTextChunk) merge(b []byte) error {
	return fields(b, func(fl field) error {
		if fl.is(1, wireBytes) {
			x.Tokens = fl.bytes()
		}
		return nil
	})
}

func (x *ImageChunk) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	if len(x.Data) > 0 {
		b = appendBytesField(b, 1, x.Data)
	}
	if x.Format != "" {
		b = appendStringField(b, 2, x.Format)
	}
	if x.ExpectedTokens != nil {
		b = appendVarintField(b, 3, uint64(int64(*x.ExpectedTokens)))
	}
	return b
}

func (x *ImageChunk) merge(b []byte) error {
	return fields(b, func(fl field) (err error) {
		switch {
		case fl.is(1, wireBytes):
			x.Data = fl.bytes()
		case fl.is(2, wireBytes):
			x.Format, err = fl.str("tinker_public.ImageChunk.format")
		case fl.is(3, wireVarint):
			v := int32(fl.u)
			x.ExpectedTokens = &v
		}
		return err
	})
}

func (x *DmelChunk) appendTo(b []byte) []byte {
	if x != nil && len(x.Dmel) > 0 {
		b = appendBytesField(b, 1, x.Dmel)
	}
	return b
}

func (x *DmelChunk) merge(b []byte) error {
	return fields(b, func(fl field) error {
		if fl.is(1, wireBytes) {
			x.Dmel = fl.bytes()
		}
		return nil
	})
}

func (x *Tensor) reset() { *x = Tensor{} }

func (x *Tensor) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	// The oneof last, where protobuf-go puts it, so the bytes match too.
	if x.Dtype != 0 {
		b = appendVarintField(b, 3, uint64(int64(x.Dtype)))
	}
	b = appendPackedInt64(b, 4, x.Shape)
	switch e := x.Encoding.(type) {
	case *Tensor_Dense:
		b = appendBytesField(b, 1, e.Dense)
	case *Tensor_SparseCsr:
		b = appendMessageField(b, 2, e.SparseCsr.appendTo)
	}
	return b
}

func (x *Tensor) merge(b []byte) error {
	return fields(b, func(fl field) (err error) {
		switch {
		case fl.is(1, wireBytes):
			x.Encoding = &Tensor_Dense{fl.bytes()}
		case fl.is(2, wireBytes):
			e, ok := x.Encoding.(*Tensor_SparseCsr)
			if !ok {
				e = &Tensor_SparseCsr{&SparseCsr{}}
				x.Encoding = e
			}
			err = e.SparseCsr.merge(fl.b)
		case fl.is(3, wireVarint):
			x.Dtype = DType(int32(fl.u))
		case fl.isInt64s(4):
			x.Shape, err = fl.int64s(x.Shape)
		}
		return err
	})
}

func (x *SparseCsr) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	if len(x.Values) > 0 {
		b = appendBytesField(b, 1, x.Values)
	}
	if len(x.CrowIndices) > 0 {
		b = appendBytesField(b, 2, x.CrowIndices)
	}
	if len(x.ColIndices) > 0 {
		b = appendBytesField(b, 3, x.ColIndices)
	}
	return b
}

func (x *SparseCsr) merge(b []byte) error {
	return fields(b, func(fl field) error {
		switch {
		case fl.is(1, wireBytes):
			x.Values = fl.bytes()
		case fl.is(2, wireBytes):
			x.CrowIndices = fl.bytes()
		case fl.is(3, wireBytes):
			x.ColIndices = fl.bytes()
		}
		return nil
	})
}

func (x *ForwardBackwardOutput) reset() { *x = ForwardBackwardOutput{} }

func (x *ForwardBackwardOutput) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	if x.LossFnOutputType != "" {
		b = appendStringField(b, 1, x.LossFnOutputType)
	}
	for _, r := range x.LossFnOutputs {
		b = appendMessageField(b, 2, r.appendTo)
	}
	return appendDoubleMap(b, 3, x.Metrics)
}

func (x *ForwardBackwardOutput) merge(b []byte) error {
	return fields(b, func(fl field) (err error) {
		switch {
		case fl.is(1, wireBytes):
			x.LossFnOutputType, err = fl.str("tinker_public.ForwardBackwardOutput.loss_fn_output_type")
		case fl.is(2, wireBytes):
			r := &ArrayRecord{}
			x.LossFnOutputs = append(x.LossFnOutputs, r)
			err = r.merge(fl.b)
		case fl.is(3, wireBytes):
			x.Metrics, err = mergeDoubleMap(x.Metrics, fl.b, "tinker_public.ForwardBackwardOutput.MetricsEntry.key")
		}
		return err
	})
}

func (x *ArrayRecord) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	if x.TypeTag != "" {
		b = appendStringField(b, 1, x.TypeTag)
	}
	for _, k := range slices.Sorted(maps.Keys(x.Fields)) {
		t := x.Fields[k]
		b = appendMessageField(b, 2, func(b []byte) []byte {
			b = appendStringField(b, 1, k)
			return appendMessageField(b, 2, t.appendTo)
		})
	}
	if x.NumDatums != 0 {
		b = appendVarintField(b, 3, uint64(x.NumDatums))
	}
	return b
}

func (x *ArrayRecord) merge(b []byte) error {
	return fields(b, func(fl field) error {
		switch {
		case fl.is(1, wireBytes):
			var err error
			x.TypeTag, err = fl.str("tinker_public.ArrayRecord.type_tag")
			return err
		case fl.is(2, wireBytes):
			k, v, ok, err := mapEntry(fl.b, "tinker_public.ArrayRecord.FieldsEntry.key", wireBytes)
			if err != nil {
				return err
			}
			t := &BatchedTensor{}
			if ok {
				if err := t.merge(v.b); err != nil {
					return err
				}
			}
			if x.Fields == nil {
				x.Fields = map[string]*BatchedTensor{}
			}
			x.Fields[k] = t
		case fl.is(3, wireVarint):
			x.NumDatums = int64(fl.u)
		}
		return nil
	})
}

func (x *BatchedTensor) appendTo(b []byte) []byte {
	if x == nil {
		return b
	}
	if len(x.Data) > 0 {
		b = appendBytesField(b, 1, x.Data)
	}
	if len(x.Offsets) > 0 {
		b = appendBytesField(b, 2, x.Offsets)
	}
	if x.Dtype != 0 {
		b = appendVarintField(b, 3, uint64(int64(x.Dtype)))
	}
	return appendPackedInt64(b, 4, x.TrailingShape)
}

func (x *BatchedTensor) merge(b []byte) error {
	return fields(b, func(fl field) (err error) {
		switch {
		case fl.is(1, wireBytes):
			x.Data = fl.bytes()
		case fl.is(2, wireBytes):
			x.Offsets = fl.bytes()
		case fl.is(3, wireVarint):
			x.Dtype = DType(int32(fl.u))
		case fl.isInt64s(4):
			x.TrailingShape, err = fl.int64s(x.TrailingShape)
		}
		return err
	})
}

// appendDoubleMap writes a map<string, double> field, keys sorted so the
// encoding is deterministic.
func appendDoubleMap(b []byte, num int, m map[string]float64) []byte {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		b = appendMessageField(b, num, func(b []byte) []byte {
			return appendDoubleField(appendStringField(b, 1, k), 2, v)
		})
	}
	return b
}

func mergeDoubleMap(m map[string]float64, entry []byte, keyName string) (map[string]float64, error) {
	k, v, ok, err := mapEntry(entry, keyName, wireFixed64)
	if err != nil {
		return m, err
	}
	if m == nil {
		m = map[string]float64{}
	}
	m[k] = 0
	if ok {
		m[k] = math.Float64frombits(v.u)
	}
	return m, nil
}
