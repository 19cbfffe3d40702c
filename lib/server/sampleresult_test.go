package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tinkerproto"
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

// TestTopKOneTokenPromptIsNull: a one-token prompt's top-k prompt logprobs
// are [null] on the protobuf path as on the JSON path, read by the official
// SDK's rule (a row whose first cell is the pad is null; a row is otherwise
// its cells up to the trailing pads), which has no first cell when k = 0.
func TestTopKOneTokenPromptIsNull(t *testing.T) {
	tk := topKProto([][]engine.TokenLogprob{nil})
	ids, _ := tinkerproto.UnpackInt32(tk.GetTokenIds())
	lps, _ := tinkerproto.UnpackFloat32(tk.GetLogprobs())
	n, k := int(tk.GetPromptLength()), int(tk.GetK())
	var rows []any
	for i := 0; i < n; i++ {
		if k > 0 && ids[i*k] == 0 && lps[i*k] == tinkerproto.TopKPadLogprob {
			rows = append(rows, nil)
			continue
		}
		row := []any{}
		for j := i * k; j < (i+1)*k; j++ {
			row = append(row, [2]any{ids[j], lps[j]})
		}
		rows = append(rows, row)
	}
	if len(rows) != 1 || rows[0] != nil {
		t.Fatalf("the SDK would read %v, want [null]", rows)
	}
	if got := string(sampleJSON(&engine.SampleResponse{TopKPromptLogprobs: [][]engine.TokenLogprob{nil}})); !strings.Contains(got, `"topk_prompt_logprobs":[null]`) {
		t.Fatalf("JSON form %s", got)
	}
}

// TestSampleResultOneTokenPrompt: a one-token prompt has no logprob and no
// top-k candidates at its only position; both forms decode, with the
// client's decoders, to [null] for each.
func TestSampleResultOneTokenPrompt(t *testing.T) {
	in := &engine.SampleResponse{
		Sequences:          []engine.Sequence{{Tokens: []int{3}, StopReason: engine.StopReasonLength}},
		PromptLogprobs:     []*float32{nil},
		TopKPromptLogprobs: [][]engine.TokenLogprob{nil},
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
		if len(got.PromptLogprobs) != 1 || got.PromptLogprobs[0] != nil {
			t.Errorf("%s: prompt logprobs %v, want [null]", name, got.PromptLogprobs)
		}
		if len(got.TopKPromptLogprobs) != 1 || got.TopKPromptLogprobs[0] != nil {
			t.Errorf("%s: top-k prompt logprobs %v, want [null]", name, got.TopKPromptLogprobs)
		}
	}
}
