package tinkerproto

import (
	"math"
	"testing"
)

func TestSampleResponseRoundTrip(t *testing.T) {
	lp := []float32{-0.5, -1.25, float32(math.NaN())}
	in := &SampleResponse{
		Sequences: []*SampledSequence{{
			StopReason: StopReason_STOP_REASON_LENGTH,
			Tokens:     PackInt32([]int{1, 128000, -7}),
			Logprobs:   PackFloat32(lp),
		}},
		PromptLogprobs: PackFloat32([]float32{float32(math.NaN()), -2}),
	}
	data, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out SampleResponse
	if err := Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	toks, err := UnpackInt32(out.Sequences[0].Tokens)
	if err != nil || len(toks) != 3 || toks[1] != 128000 || toks[2] != -7 {
		t.Fatalf("tokens %v, %v", toks, err)
	}
	got, _ := UnpackFloat32(out.Sequences[0].Logprobs)
	if got[0] != -0.5 || got[1] != -1.25 || !math.IsNaN(float64(got[2])) {
		t.Fatalf("logprobs %v", got)
	}
	if out.Sequences[0].StopReason != StopReason_STOP_REASON_LENGTH {
		t.Fatal("stop reason lost")
	}
	// Field 2 of SampledSequence is bytes: check the raw wire layout once.
	raw, _ := Marshal(&SampledSequence{Tokens: PackInt32([]int{1})})
	want := []byte{0x12, 4, 1, 0, 0, 0}
	if string(raw) != string(want) {
		t.Fatalf("wire bytes % x, want % x", raw, want)
	}
	if _, err := UnpackInt32([]byte{1, 2, 3}); err == nil {
		t.Fatal("odd length accepted")
	}
}
