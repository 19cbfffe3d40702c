package tinkerapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// LoraConfig is the adapter configuration of create_model
// (docs/protocol.md, "Models and weights").
type LoraConfig struct {
	Rank                              int
	Seed                              *int64 // nil: the server picks one
	TrainMLP, TrainAttn, TrainUnembed bool
}

// DefaultLoraConfig is the SDK's default: rank 32, every part trained.
func DefaultLoraConfig() LoraConfig {
	return LoraConfig{Rank: 32, TrainMLP: true, TrainAttn: true, TrainUnembed: true}
}

func (l LoraConfig) validate() error {
	if l.Rank <= 0 {
		return fmt.Errorf("LoRA rank must be positive, got %d", l.Rank)
	}
	if !l.TrainMLP && !l.TrainAttn && !l.TrainUnembed {
		return errors.New("at least one of train_mlp, train_attn and train_unembed must be true")
	}
	return nil
}

// GetInfoResponse is the answer of get_info
// (docs/protocol.md, "Models and weights").
type GetInfoResponse struct {
	ModelID   string    `json:"model_id"`
	ModelData ModelData `json:"model_data"`
	IsLora    *bool     `json:"is_lora,omitempty"`
	LoraRank  *int      `json:"lora_rank,omitempty"`
	ModelName string    `json:"model_name,omitempty"`
}

// ModelData describes a model's base.
type ModelData struct {
	Arch        string `json:"arch,omitempty"`
	ModelName   string `json:"model_name,omitempty"`
	TokenizerID string `json:"tokenizer_id,omitempty"`
}

// Tokenizer returns the Hugging Face tokenizer repo of the model: the
// part of tokenizer_id before the first ':', as the SDK uses it.
func (d ModelData) Tokenizer() string {
	id, _, _ := strings.Cut(d.TokenizerID, ":")
	return id
}

// CreateModel creates a LoRA training run on baseModel and returns its
// model id (which is also the training run id).
func (s *Session) CreateModel(ctx context.Context, baseModel string, lora LoraConfig, userMetadata map[string]string) (string, error) {
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	if baseModel == "" {
		return "", errors.New("create model: base model is empty")
	}
	if err := lora.validate(); err != nil {
		return "", fmt.Errorf("create model: %w", err)
	}
	type loraWire struct {
		Rank         int    `json:"rank"`
		Seed         *int64 `json:"seed,omitempty"`
		TrainUnembed bool   `json:"train_unembed"`
		TrainMLP     bool   `json:"train_mlp"`
		TrainAttn    bool   `json:"train_attn"`
	}
	req := struct {
		SessionID    string            `json:"session_id"`
		ModelSeqID   int64             `json:"model_seq_id"`
		BaseModel    string            `json:"base_model"`
		UserMetadata map[string]string `json:"user_metadata,omitempty"`
		LoraConfig   loraWire          `json:"lora_config"`
		Type         string            `json:"type"`
	}{s.id, s.modelSeq.Add(1) - 1, baseModel, userMetadata,
		loraWire{lora.Rank, lora.Seed, lora.TrainUnembed, lora.TrainMLP, lora.TrainAttn}, "create_model"}
	submitted := time.Now()
	h, err := s.submit(ctx, "/api/v1/create_model", req)
	if err != nil {
		return "", fmt.Errorf("create model on %s: %w", baseModel, err)
	}
	var res struct {
		ModelID string `json:"model_id"`
	}
	if err := s.await(ctx, h, "CreateModel", submitted, &res, false); err != nil {
		return "", fmt.Errorf("create model on %s: %w", baseModel, err)
	}
	if res.ModelID == "" {
		return "", &SchemaError{Path: "/api/v1/retrieve_future", Field: "model_id", Reason: "missing in the CreateModel result"}
	}
	// The model's seq counter starts lazily at 0 (create_model's own
	// implicit number), so its first operation is sent with seq_id 1.
	return res.ModelID, nil
}

// GetInfo returns a model's metadata (synchronous, no seq id).
func (c *Client) GetInfo(ctx context.Context, modelID string) (*GetInfoResponse, error) {
	if modelID == "" {
		return nil, errors.New("get info: model id is empty")
	}
	var out GetInfoResponse
	err := c.Do(ctx, http.MethodPost, "/api/v1/get_info", map[string]string{"model_id": modelID, "type": "get_info"}, &out,
		WithValidator(requireFields("model_id", "model_data")))
	if err != nil {
		return nil, fmt.Errorf("get info of %s: %w", modelID, err)
	}
	return &out, nil
}

// GetInfo is Client.GetInfo.
func (s *Session) GetInfo(ctx context.Context, modelID string) (*GetInfoResponse, error) {
	return s.c.GetInfo(ctx, modelID)
}

// SaveWeightsForSampler saves the model's current weights as a sampler
// checkpoint and returns its tinker://<run>/sampler_weights/<name> path.
// An empty name lets the server choose one; ttlSeconds nil means the
// checkpoint never expires.
func (s *Session) SaveWeightsForSampler(ctx context.Context, modelID, name string, ttlSeconds *int64) (string, error) {
	return s.save(ctx, "save_weights_for_sampler", "SaveWeightsForSampler", modelID, name, ttlSeconds)
}

// SaveWeights saves the model's full training state and returns its
// tinker://<run>/weights/<name> path. It never overwrites.
func (s *Session) SaveWeights(ctx context.Context, modelID, name string, ttlSeconds *int64) (string, error) {
	return s.save(ctx, "save_weights", "SaveWeights", modelID, name, ttlSeconds)
}

func (s *Session) save(ctx context.Context, op, kind, modelID, name string, ttl *int64) (string, error) {
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	if err := checkSave(op, modelID, name, ttl); err != nil {
		return "", err
	}
	submitted := time.Now()
	h, err := s.submit(ctx, "/api/v1/"+op, saveRequest(op, modelID, name, ttl, s.nextModelSeq(modelID)))
	if err != nil {
		return "", fmt.Errorf("%s of %s: %w", op, modelID, err)
	}
	return s.awaitSave(ctx, h, op, kind, modelID, submitted)
}

func checkSave(op, modelID, name string, ttl *int64) error {
	if modelID == "" {
		return fmt.Errorf("%s: model id is empty", op)
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("%s: checkpoint name %q must not contain '/'", op, name)
	}
	if ttl != nil && *ttl <= 0 {
		return fmt.Errorf("%s: ttl must be a positive number of seconds, got %d", op, *ttl)
	}
	return nil
}

func saveRequest(op, modelID, name string, ttl *int64, seq int64) map[string]any {
	req := map[string]any{"model_id": modelID, "seq_id": seq, "type": op}
	if name != "" {
		req["path"] = name
	}
	if ttl != nil {
		req["ttl_seconds"] = *ttl
	}
	if op == "save_weights" {
		req["overwrite"] = false
	}
	return req
}

// awaitSave waits for a save's future and checks it names a tinker path.
func (s *Session) awaitSave(ctx context.Context, h futureHandle, op, kind, modelID string, submitted time.Time) (string, error) {
	var res struct {
		Path string `json:"path"`
	}
	if err := s.await(ctx, h, kind, submitted, &res, false); err != nil {
		return "", fmt.Errorf("%s of %s: %w", op, modelID, err)
	}
	if _, err := ParsePath(res.Path); err != nil {
		return "", &SchemaError{Path: "/api/v1/retrieve_future", Field: "path", Reason: fmt.Sprintf("%s result has no valid tinker path: %q", kind, res.Path)}
	}
	return res.Path, nil
}
