package server

import (
	"encoding/binary"
	"encoding/json"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// sampleJSON is the legacy JSON form of a sample result.
func sampleJSON(r *SampleResponse) []byte {
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

// sampleProto encodes tinker_public.SampleResponse (spec §3.12) by hand:
// arrays are raw little-endian bytes fields.
func sampleProto(r *SampleResponse) []byte {
	var b []byte
	for _, s := range r.Sequences {
		var m []byte
		if s.StopReason == "length" {
			m = protowire.AppendTag(m, 1, protowire.VarintType)
			m = protowire.AppendVarint(m, 1)
		}
		toks := make([]byte, 0, 4*len(s.Tokens))
		for _, t := range s.Tokens {
			toks = binary.LittleEndian.AppendUint32(toks, uint32(int32(t)))
		}
		m = protowire.AppendTag(m, 2, protowire.BytesType)
		m = protowire.AppendBytes(m, toks)
		if s.Logprobs != nil {
			m = protowire.AppendTag(m, 3, protowire.BytesType)
			m = protowire.AppendBytes(m, f32bytes(s.Logprobs))
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
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
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, f32bytes(vals))
	}
	if r.TopKPromptLogprobs != nil {
		k := 0
		for _, row := range r.TopKPromptLogprobs {
			k = max(k, len(row))
		}
		var ids, lps []byte
		for _, row := range r.TopKPromptLogprobs {
			for j := 0; j < k; j++ {
				id, lp := int32(0), float32(-99999.0)
				if j < len(row) {
					id, lp = int32(row[j].Token), row[j].Logprob
				}
				ids = binary.LittleEndian.AppendUint32(ids, uint32(id))
				lps = binary.LittleEndian.AppendUint32(lps, math.Float32bits(lp))
			}
		}
		var m []byte
		m = protowire.AppendTag(m, 1, protowire.BytesType)
		m = protowire.AppendBytes(m, ids)
		m = protowire.AppendTag(m, 2, protowire.BytesType)
		m = protowire.AppendBytes(m, lps)
		m = protowire.AppendTag(m, 3, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(k))
		m = protowire.AppendTag(m, 4, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(len(r.TopKPromptLogprobs)))
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b
}
func f32bytes(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out
}
