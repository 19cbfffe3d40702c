package server

import (
	"reflect"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Both result forms must decode, with the client's decoders, to the same
// sequences, prompt logprobs (nil where not computed) and ragged top-k rows.
func TestSampleResultRoundTrip(t *testing.T) {
	lp1, lp2 := float32(-0.25), float32(-1.5)
	in := &engine.SampleResponse{
		Sequences: []engine.Sequence{
			{Tokens: []int{7, 300000, 0}, Logprobs: []float32{-0.5, -1, -2}, StopReason: engine.StopReasonLength},
			{Tokens: []int{}, StopReason: engine.StopReasonStop},
		},
		PromptLogprobs: []*float32{nil, &lp1, &lp2},
		TopKPromptLogprobs: [][]engine.TokenLogprob{nil,
			{{Token: 5, Logprob: -0.1}, {Token: 0, Logprob: -3}},
			{{Token: 9, Logprob: -0.2}}},
	}
	want := &tinkerapi.SampleResponse{
		Sequences: []tinkerapi.SampledSequence{
			{Tokens: []int{7, 300000, 0}, Logprobs: []float32{-0.5, -1, -2}, StopReason: "length"},
			{Tokens: []int{}, StopReason: "stop"},
		},
		PromptLogprobs: []*float32{nil, &lp1, &lp2},
		TopKPromptLogprobs: [][]tinkerapi.TopKLogprob{nil,
			{{Token: 5, Logprob: -0.1}, {Token: 0, Logprob: -3}},
			{{Token: 9, Logprob: -0.2}}},
	}
	fromProto, err := tinkerapi.DecodeSampleProto(sampleProto(in))
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := tinkerapi.DecodeSampleJSON(sampleJSON(in))
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]*tinkerapi.SampleResponse{"proto": fromProto, "json": fromJSON} {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v", name, got, want)
		}
	}
}
