package server

import (
	"encoding/json"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
)

// TestEngineSamplerEndToEnd: create a model on tiny-llama, save sampler
// weights, and sample greedily through the real engine twice; the protobuf
// results agree and respect max_tokens.
func TestEngineSamplerEndToEnd(t *testing.T) {
	e := newEnv(t, "", Options{Sampler: EngineSampler(&engine.Pool{})})
	sess := e.newSession()
	var fut struct {
		RequestID string `json:"request_id"`
		ModelID   string `json:"model_id"`
	}
	e.post("/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 0, "base_model": "tinker-local/tiny-llama", "lora_config": map[string]any{"rank": 4, "seed": 1}}, &fut)
	e.poll(fut.RequestID)
	model := fut.ModelID
	e.post("/api/v1/save_weights_for_sampler", map[string]any{"model_id": model, "path": "s", "seq_id": 1}, &fut)
	_, b, _ := e.poll(fut.RequestID)
	var saved struct{ Path string }
	json.Unmarshal(b, &saved)
	var ss struct {
		ID string `json:"sampling_session_id"`
	}
	e.post("/api/v1/create_sampling_session", map[string]any{"session_id": sess.SessionID, "sampling_session_seq_id": 0, "model_path": saved.Path}, &ss)
	var got [][]int32
	for i := 0; i < 2; i++ {
		var sub struct {
			RequestID string   `json:"request_id"`
			IDs       []string `json:"sample_sequence_ids"`
		}
		e.post("/api/v1/asample", map[string]any{"sampling_session_id": ss.ID, "seq_id": i, "num_samples": 1,
			"prompt":          map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{256, 'H', 'i'}}}},
			"sampling_params": map[string]any{"max_tokens": 5, "temperature": 0, "top_k": -1, "top_p": 1}, "prompt_logprobs": true, "topk_prompt_logprobs": 0}, &sub)
		if len(sub.IDs) != 1 {
			t.Errorf("sample_sequence_ids = %v", sub.IDs)
		}
		_, b, h := e.poll(sub.RequestID, "Accept", "application/x-protobuf")
		if h.Get("Content-Type") != "application/x-protobuf" {
			t.Fatalf("not protobuf: %s", b)
		}
		toks, plp := decodeSample(t, b)
		if len(toks) == 0 || len(toks) > 5 || len(plp) != 3 {
			t.Fatalf("tokens %v prompt logprobs %v", toks, plp)
		}
		got = append(got, toks)
	}
	if fmtInts(got[0]) != fmtInts(got[1]) {
		t.Errorf("greedy samples differ: %v vs %v", got[0], got[1])
	}
}

func fmtInts(v []int32) string {
	b, _ := json.Marshal(v)
	return string(b)
}
