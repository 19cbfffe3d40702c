package tinkerapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Checkpoint is one saved checkpoint; field order matches the official
// CLI's JSON output (docs/protocol.md, "Runs and checkpoints").
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

// TrainingRun is one training run, a LoRA model
// (docs/protocol.md, "Runs and checkpoints").
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

// Path is a parsed tinker://<run_id>/<kind>/<name> checkpoint path: exactly
// three parts, kind weights or sampler_weights, no "/" in the run id or name.
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
	// As the official SDK parses: an empty run id or name passes, and the
	// service answers for it (the official CLI shows that answer). The
	// shell's builtins refuse them up front (ParseArg).
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
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

// ServerCapabilities is the body of GET /api/v1/get_server_capabilities.
type ServerCapabilities struct {
	SupportedModels []SupportedModel `json:"supported_models"`
}

// SupportedModel is one base model the service can train and sample.
type SupportedModel struct {
	ModelName        string `json:"model_name,omitempty"`
	MaxContextLength int    `json:"max_context_length,omitempty"`
	// Servable and Unavailable are tinker serve's: whether its weights are
	// present now, and if not how to provide them. Other backends leave
	// Servable nil (unknown).
	Servable    *bool  `json:"servable,omitempty"`
	Unavailable string `json:"unavailable,omitempty"`
}

// BillingUsageResponse is the body of GET /api/v1/billing/usage/events
// (docs/protocol.md, "Billing"). Marshalling it gives the official CLI's
// JSON shape: all envelope keys (nulls included), event_info with "type"
// first, sessions in server order.
type BillingUsageResponse struct {
	Data     []BillingUsageEvent `json:"data"`
	Sessions BillingSessions     `json:"sessions"`
}

// BillingUsageEvent is one hourly usage bucket.
type BillingUsageEvent struct {
	BucketStart *time.Time       `json:"bucket_start"`
	BucketEnd   *time.Time       `json:"bucket_end"`
	BaseModel   *string          `json:"base_model"`
	UserID      *string          `json:"user_id"`
	UserName    *string          `json:"user_name"`
	SessionID   *string          `json:"session_id"`
	ProjectID   *string          `json:"project_id"`
	EventInfo   BillingEventInfo `json:"event_info"`
}

// BillingEventInfo is the usage variant tagged by Type: training
// {token_count}, sampling_prefill {cached, token_count}, sampling_sample
// {token_count}, checkpoint {count}, storage {gigabyte_hours}.
type BillingEventInfo struct {
	Type          string   `json:"type"`
	Cached        *bool    `json:"cached,omitempty"`
	TokenCount    *int64   `json:"token_count,omitempty"`
	Count         *int64   `json:"count,omitempty"`
	GigabyteHours *float64 `json:"gigabyte_hours,omitempty"`
}

// BillingSessions maps session id → user metadata, keeping server order.
type BillingSessions []BillingSession

// BillingSession is one entry of BillingUsageResponse.Sessions.
type BillingSession struct {
	SessionID    string
	UserMetadata json.RawMessage // a JSON object, or nil for null
}

// UnmarshalJSON reads {"<id>": {"user_metadata": {...}|null}, ...} in order.
func (s *BillingSessions) UnmarshalJSON(b []byte) error {
	*s = nil
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("billing sessions: want a JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return fmt.Errorf("billing sessions: %w", err)
		}
		var v struct {
			UserMetadata json.RawMessage `json:"user_metadata"`
		}
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("billing sessions: %w", err)
		}
		if string(v.UserMetadata) == "null" {
			v.UserMetadata = nil
		}
		*s = append(*s, BillingSession{SessionID: key.(string), UserMetadata: v.UserMetadata})
	}
	return nil
}

// MarshalJSON writes the sessions back as an object in order.
func (s BillingSessions) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, sess := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(sess.SessionID)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteString(`:{"user_metadata":`)
		if len(sess.UserMetadata) == 0 {
			b.WriteString("null")
		} else {
			b.Write(sess.UserMetadata)
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
