package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/peft"
)

// TestLoadWeightsReproducesCheckpoint: a model created from a checkpoint
// (create-via-load) saves exactly the checkpoint's weights, while a fresh
// model with another seed does not.
func TestLoadWeightsReproducesCheckpoint(t *testing.T) {
	e := newEnv(t, "", Options{})
	sess := e.newSession()
	var fut struct {
		RequestID string `json:"request_id"`
		ModelID   string `json:"model_id"`
	}
	save := func(model, name string, seq int) string {
		e.post("/api/v1/save_weights", map[string]any{"model_id": model, "path": name, "seq_id": seq}, &fut)
		_, b, _ := e.poll(fut.RequestID)
		var res struct{ Path string }
		json.Unmarshal(b, &res)
		if res.Path == "" {
			t.Fatalf("save: %s", b)
		}
		return res.Path
	}
	weights := func(path string) []byte {
		rest := strings.TrimPrefix(path, "tinker://")
		parts := strings.Split(rest, "/")
		b, err := os.ReadFile(filepath.Join(e.srv.checkpointDir(parts[0], parts[1], parts[2]), peft.WeightsFile))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	e.post("/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 0, "base_model": "tinker-local/tiny-llama", "lora_config": map[string]any{"rank": 4, "seed": 11}}, &fut)
	e.poll(fut.RequestID)
	src := save(fut.ModelID, "a", 1)

	e.post("/api/v1/load_weights", map[string]any{"session_id": sess.SessionID, "model_seq_id": 1, "path": src, "optimizer": false}, &fut)
	_, b, _ := e.poll(fut.RequestID)
	if !strings.Contains(string(b), `"type":"load_weights"`) || fut.ModelID != sess.SessionID+":train:1" {
		t.Fatalf("load_weights = %s (%s)", b, fut.ModelID)
	}
	loaded := save(fut.ModelID, "b", 2)
	if !bytes.Equal(weights(src), weights(loaded)) {
		t.Error("weights saved after load differ from the loaded checkpoint")
	}
	e.post("/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 2, "base_model": "tinker-local/tiny-llama", "lora_config": map[string]any{"rank": 4, "seed": 12}}, &fut)
	e.poll(fut.RequestID)
	other := fut.ModelID
	if bytes.Equal(weights(src), weights(save(other, "c", 1))) {
		t.Error("a different seed gave the same weights")
	}
	// Legacy mode into an existing model, then saves match the source.
	e.post("/api/v1/load_weights", map[string]any{"model_id": other, "seq_id": 2, "path": src, "optimizer": true}, &fut)
	e.poll(fut.RequestID)
	if !bytes.Equal(weights(src), weights(save(other, "d", 3))) {
		t.Error("legacy load_weights did not adopt the checkpoint's weights")
	}
	// Mismatched shapes are refused; without an engine the training
	// endpoints say clearly that this server cannot train.
	e.post("/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 3, "base_model": "tinker-local/tiny-qwen3", "lora_config": map[string]any{"rank": 4}}, &fut)
	if code, _, _ := e.do("POST", "/api/v1/load_weights", map[string]any{"model_id": fut.ModelID, "path": src, "optimizer": false}); code != 400 {
		t.Errorf("mismatched load = %d", code)
	}
	if code, b, _ := e.do("POST", "/api/v1/optim_step", map[string]any{"model_id": other, "adam_params": map[string]any{}}); code != 400 || !strings.Contains(string(b), "without an engine") {
		t.Errorf("optim_step = %d %s", code, b)
	}
}

func TestQueueStatePausedCapacity(t *testing.T) {
	e := newEnv(t, manifestFor(1, 0), Options{FutureDelay: 10 * time.Second, PollHold: 100 * time.Millisecond})
	run := firstRun(e)
	var last string
	for i := 0; i < busyQueue+1; i++ {
		var fut struct {
			RequestID string `json:"request_id"`
		}
		e.post("/api/v1/save_weights", map[string]any{"model_id": run, "path": fmt.Sprint("q", i), "seq_id": i + 1}, &fut)
		last = fut.RequestID
	}
	code, b, _ := e.do("POST", "/api/v1/retrieve_future", map[string]any{"request_id": last, "allow_metadata_only": true})
	if code != 200 || !strings.Contains(string(b), `"queue_state":"paused_capacity"`) || !strings.Contains(string(b), "requests ahead") {
		t.Errorf("poll behind a busy queue = %d %s", code, b)
	}
}

type bigSampler struct{}

func (bigSampler) Sample(ctx context.Context, req SampleRequest) (*engine.SampleResponse, error) {
	toks := make([]int, 300_000) // 1.2 MB of int32 tokens in the proto
	return &engine.SampleResponse{Sequences: []engine.Sequence{{Tokens: toks, StopReason: "length"}}}, nil
}

// TestMetadataOnlyHandshake: a large result is announced once with
// complete_metadata when the poll allows it, then sent in full.
func TestMetadataOnlyHandshake(t *testing.T) {
	e := newEnv(t, "", Options{Sampler: bigSampler{}, FutureDelay: time.Millisecond})
	sess := e.newSession()
	var ss struct {
		ID string `json:"sampling_session_id"`
	}
	e.post("/api/v1/create_sampling_session", map[string]any{"session_id": sess.SessionID, "sampling_session_seq_id": 0, "base_model": "tinker-local/tiny-llama"}, &ss)
	var fut struct {
		RequestID string `json:"request_id"`
	}
	e.post("/api/v1/asample", map[string]any{"sampling_session_id": ss.ID, "seq_id": 0, "num_samples": 1,
		"prompt": map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{1}}}}, "sampling_params": map[string]any{"max_tokens": 1}}, &fut)
	accept := []string{"Accept", "application/x-protobuf"}
	_, b, _ := e.poll(fut.RequestID, accept...)
	if !strings.Contains(string(b), `"status":"complete_metadata"`) || !strings.Contains(string(b), `"response_payload_size":`) {
		t.Fatalf("first poll = %.200s", b)
	}
	code, b, h := e.do("POST", "/api/v1/retrieve_future", map[string]any{"request_id": fut.RequestID, "allow_metadata_only": true}, accept...)
	if code != 200 || h.Get("Content-Type") != "application/x-protobuf" || len(b) < 1_200_000 {
		t.Errorf("second poll = %d %s, %d bytes (complete_metadata must not repeat)", code, h.Get("Content-Type"), len(b))
	}
	if toks, _ := decodeSample(t, b); len(toks) != 300_000 {
		t.Errorf("decoded %d tokens", len(toks))
	}
}

type blockingSampler struct{ release chan struct{} }

func (b blockingSampler) Sample(ctx context.Context, req SampleRequest) (*engine.SampleResponse, error) {
	<-b.release
	return &engine.SampleResponse{Sequences: []engine.Sequence{{Tokens: []int{1}, StopReason: "stop"}}}, nil
}

func TestSamplingBackpressure(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, "", Options{Sampler: blockingSampler{release}, MaxPendingSamples: 1})
	defer close(release)
	sess := e.newSession()
	var ss struct {
		ID string `json:"sampling_session_id"`
	}
	e.post("/api/v1/create_sampling_session", map[string]any{"session_id": sess.SessionID, "sampling_session_seq_id": 0, "base_model": "tinker-local/tiny-llama"}, &ss)
	req := func(seq int) map[string]any {
		return map[string]any{"sampling_session_id": ss.ID, "seq_id": seq, "num_samples": 1,
			"prompt": map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{1}}}}, "sampling_params": map[string]any{"max_tokens": 1}}
	}
	e.post("/api/v1/asample", req(0), nil)
	code, b, h := e.do("POST", "/api/v1/asample", req(1), "X-Tinker-Sampling-Backpressure", "1")
	if code != 429 || h.Get("Retry-After") == "" || !strings.Contains(string(b), "backpressure") {
		t.Errorf("second sample = %d %s", code, b)
	}
	// Without the opt-in header the request is queued instead.
	if code, _, _ := e.do("POST", "/api/v1/asample", req(2)); code != 200 {
		t.Errorf("without opt-in = %d", code)
	}
}
