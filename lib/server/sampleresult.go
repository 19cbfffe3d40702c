package server

import (
	"encoding/json"
	"math"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// A sample result goes out in two forms: protobuf for clients that send
// Accept: application/x-protobuf, the legacy JSON otherwise. See
// docs/protocol.md, "Sampling" and "Protobuf bodies".

// sampleJSON is the legacy JSON form of a sample result.
func sampleJSON(r *engine.SampleResponse) []byte {
	type seq struct {
		StopReason string    `json:"stop_reason"`
		Tokens     []int     `json:"tokens"`
		Logprobs   []float32 `json:"logprobs"`
	}
	out := struct {
		Type   string     `json:"type"`
		Seqs   []seq      `json:"sequences"`
		Prompt []*float32 `json:"prompt_logprobs"`
		TopK   [][][2]any `json:"topk_prompt_logprobs"`
	}{Type: "sample", Prompt: r.PromptLogprobs}
	for _, s := range r.Sequences {
		out.Seqs = append(out.Seqs, seq{s.StopReason, s.Tokens, s.Logprobs})
	}
	if r.TopKPromptLogprobs != nil {
		for _, row := range r.TopKPromptLogprobs {
			if row == nil {
				out.TopK = append(out.TopK, nil)
				continue
			}
			var cells [][2]any
			for _, e := range row {
				cells = append(cells, [2]any{e.Token, e.Logprob})
			}
			out.TopK = append(out.TopK, cells)
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// sampleProto is the tinker_public.SampleResponse form of a sample result:
// arrays travel as little-endian bytes, a prompt position without a
// logprob as NaN.
func sampleProto(r *engine.SampleResponse) []byte {
	m := &tinkerproto.SampleResponse{}
	for _, s := range r.Sequences {
		sq := &tinkerproto.SampledSequence{Tokens: tinkerproto.PackInt32(s.Tokens)}
		if s.StopReason == engine.StopReasonLength {
			sq.StopReason = tinkerproto.StopReason_STOP_REASON_LENGTH
		}
		if s.Logprobs != nil {
			sq.Logprobs = tinkerproto.PackFloat32(s.Logprobs)
		}
		m.Sequences = append(m.Sequences, sq)
	}
	if r.PromptLogprobs != nil {
		vals := make([]float32, len(r.PromptLogprobs))
		for i, p := range r.PromptLogprobs {
			if p == nil {
				vals[i] = float32(math.NaN())
			} else {
				vals[i] = *p
			}
		}
		m.PromptLogprobs = tinkerproto.PackFloat32(vals)
	}
	if r.TopKPromptLogprobs != nil {
		m.TopkPromptLogprobs = topKProto(r.TopKPromptLogprobs)
	}
	b, _ := tinkerproto.Marshal(m)
	return b
}

// topKProto lays the rows out as a prompt_length × k matrix. k is at
// least 1: a row without candidates (the first position's) must be a pad
// cell, which decoders read as null; with k = 0 the official SDK would
// read an empty list where the JSON form has null.
func topKProto(rows [][]engine.TokenLogprob) *tinkerproto.TopkPromptLogprobs {
	k := 1
	for _, row := range rows {
		k = max(k, len(row))
	}
	ids := make([]int, 0, k*len(rows))
	lps := make([]float32, 0, k*len(rows))
	for _, row := range rows {
		for j := 0; j < k; j++ {
			id, lp := 0, float32(tinkerproto.TopKPadLogprob)
			if j < len(row) {
				id, lp = row[j].Token, row[j].Logprob
			}
			ids = append(ids, id)
			lps = append(lps, lp)
		}
	}
	return &tinkerproto.TopkPromptLogprobs{TokenIds: tinkerproto.PackInt32(ids), Logprobs: tinkerproto.PackFloat32(lps),
		K: uint32(k), PromptLength: uint32(len(rows))}
}
