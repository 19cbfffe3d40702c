// Package tinkerapi is a Go client for the Tinker HTTP API and the wire types
// it shares with the local server. See ../../../shared/spec/tinker-api.md.
package tinkerapi

import (
	"fmt"
	"strings"
	"time"
)

// Checkpoint is one saved checkpoint (spec §3.5). Field order matches the
// official CLI's JSON output.
type Checkpoint struct {
	CheckpointID   string     `json:"checkpoint_id"`
	CheckpointType string     `json:"checkpoint_type"` // "training" | "sampler"
	Time           time.Time  `json:"time"`
	TinkerPath     string     `json:"tinker_path"`
	SizeBytes      *int64     `json:"size_bytes"`
	Public         bool       `json:"public"`
	ExpiresAt      *time.Time `json:"expires_at"`
	// TrainingRunID may be sent by servers; clients fall back to parsing TinkerPath.
	TrainingRunID string `json:"training_run_id,omitempty"`
}

// RunID returns the training run that owns the checkpoint.
func (c *Checkpoint) RunID() string {
	if c.TrainingRunID != "" {
		return c.TrainingRunID
	}
	if p, err := ParsePath(c.TinkerPath); err == nil {
		return p.RunID
	}
	return ""
}

// Cursor describes one page of an offset-paginated listing.
type Cursor struct {
	Offset     int `json:"offset"`
	Limit      int `json:"limit"`
	TotalCount int `json:"total_count"`
}

// CheckpointsListResponse is the body of both checkpoint listings.
type CheckpointsListResponse struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
	Cursor      *Cursor      `json:"cursor"`
}

// TrainingRun is one training run (a LoRA model) (spec §3.5).
type TrainingRun struct {
	TrainingRunID         string            `json:"training_run_id"`
	BaseModel             string            `json:"base_model"`
	ModelOwner            string            `json:"model_owner"`
	IsLora                bool              `json:"is_lora"`
	Corrupted             bool              `json:"corrupted"`
	LoraRank              *int              `json:"lora_rank"`
	LastRequestTime       time.Time         `json:"last_request_time"`
	LastCheckpoint        *Checkpoint       `json:"last_checkpoint"`
	LastSamplerCheckpoint *Checkpoint       `json:"last_sampler_checkpoint"`
	UserMetadata          map[string]string `json:"user_metadata"`
}

// TrainingRunsResponse is the body of GET /api/v1/training_runs.
type TrainingRunsResponse struct {
	TrainingRuns []TrainingRun `json:"training_runs"`
	Cursor       Cursor        `json:"cursor"`
}

// CheckpointArchiveURL is where a checkpoint archive can be fetched without auth.
type CheckpointArchiveURL struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

// WeightsInfo is the answer of POST /api/v1/weights_info.
type WeightsInfo struct {
	BaseModel    string `json:"base_model"`
	IsLora       bool   `json:"is_lora"`
	LoraRank     *int   `json:"lora_rank,omitempty"`
	TrainUnembed *bool  `json:"train_unembed,omitempty"`
	TrainMLP     *bool  `json:"train_mlp,omitempty"`
	TrainAttn    *bool  `json:"train_attn,omitempty"`
}

// ListSessionsResponse is the body of GET /api/v1/sessions.
type ListSessionsResponse struct {
	Sessions []string `json:"sessions"`
}

// GetSessionResponse is the body of GET /api/v1/sessions/{id}.
type GetSessionResponse struct {
	TrainingRunIDs []string `json:"training_run_ids"`
	SamplerIDs     []string `json:"sampler_ids"`
}

// GetSamplerResponse is the body of GET /api/v1/samplers/{id}.
type GetSamplerResponse struct {
	SamplerID string  `json:"sampler_id"`
	BaseModel string  `json:"base_model"`
	ModelPath *string `json:"model_path,omitempty"`
}

// TraceExport is one poll of GET /api/v1/sessions/{id}/trace_export.
type TraceExport struct {
	Status string `json:"status"` // pending | ready | failed
	URL    string `json:"url,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Path is a parsed tinker://<run_id>/<kind>/<name> checkpoint path (spec §1.8).
type Path struct {
	RunID          string // training run id, usually contains ':'
	Kind           string // "weights" | "sampler_weights"
	Name           string
	CheckpointID   string // Kind + "/" + Name
	CheckpointType string // "training" | "sampler"
}

// String renders the path back in tinker:// form.
func (p Path) String() string { return "tinker://" + p.RunID + "/" + p.Kind + "/" + p.Name }

// ParsePath parses a tinker:// checkpoint path. Unlike the SDK it rejects
// empty run ids and names.
func ParsePath(s string) (Path, error) {
	rest, ok := strings.CutPrefix(s, "tinker://")
	if !ok {
		return Path{}, fmt.Errorf("Invalid tinker path: %s", s)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return Path{}, fmt.Errorf("Invalid tinker path: %s", s)
	}
	p := Path{RunID: parts[0], Kind: parts[1], Name: parts[2], CheckpointID: parts[1] + "/" + parts[2]}
	switch parts[1] {
	case "weights":
		p.CheckpointType = "training"
	case "sampler_weights":
		p.CheckpointType = "sampler"
	default:
		return Path{}, fmt.Errorf("Invalid tinker path: %s", s)
	}
	return p, nil
}
