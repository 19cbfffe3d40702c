package tinkerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The SDK validates responses strictly: a missing or null required field
// is an error, and the CLI reports it as "Data returned by API invalid for
// expected schema." (docs/compat.md, "API errors and retries").
// Go's decoder cannot tell a missing
// field from a zero value, so runs and checkpoints are decoded in one pass
// into wire types whose required fields are pointers, then checked and
// converted; smaller responses get a presence check (requireFields)
// before the normal decode.

type cursorWire struct {
	Offset     *int `json:"offset"`
	Limit      *int `json:"limit"`
	TotalCount *int `json:"total_count"`
}

type checkpointWire struct {
	CheckpointID   *string  `json:"checkpoint_id"`
	CheckpointType *string  `json:"checkpoint_type"`
	Time           wireTime `json:"time"`
	TinkerPath     *string  `json:"tinker_path"`
	SizeBytes      *int64   `json:"size_bytes"`
	Public         *bool    `json:"public"`
	ExpiresAt      wireTime `json:"expires_at"`
	TrainingRunID  *string  `json:"training_run_id"`
}

type runWire struct {
	TrainingRunID         *string           `json:"training_run_id"`
	BaseModel             *string           `json:"base_model"`
	ModelOwner            *string           `json:"model_owner"`
	IsLora                *bool             `json:"is_lora"`
	Corrupted             *bool             `json:"corrupted"`
	LoraRank              *int              `json:"lora_rank"`
	LastRequestTime       wireTime          `json:"last_request_time"`
	LastCheckpoint        *checkpointWire   `json:"last_checkpoint"`
	LastSamplerCheckpoint *checkpointWire   `json:"last_sampler_checkpoint"`
	UserMetadata          map[string]string `json:"user_metadata"`
}

// fieldErrs collects the first problem found.
type fieldErrs struct{ err error }

func (f *fieldErrs) fail(field, reason string) {
	if f.err == nil {
		f.err = &SchemaError{Field: field, Reason: reason}
	}
}

func (f *fieldErrs) missing(present bool, field string) {
	if !present {
		f.fail(field, "required field missing or null")
	}
}

// wireTime is a datetime read during the one-pass decode. A bad value is
// kept as an error instead of aborting the decode, so that the schema error
// can name the field.
type wireTime struct {
	t   time.Time
	set bool
	err error
}

func (w *wireTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	w.set = true
	w.err = flexTime{&w.t}.UnmarshalJSON(b)
	return nil
}

// time returns a required datetime.
func (f *fieldErrs) time(w wireTime, field string) time.Time {
	f.missing(w.set, field)
	if w.err != nil {
		f.fail(field, w.err.Error())
	}
	return w.t
}

// optTime returns an optional datetime.
func (f *fieldErrs) optTime(w wireTime, field string) *time.Time {
	if !w.set {
		return nil
	}
	t := f.time(w, field)
	return &t
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (f *fieldErrs) checkpoint(w *checkpointWire, at string) Checkpoint {
	f.missing(w.CheckpointID != nil, at+".checkpoint_id")
	f.missing(w.CheckpointType != nil, at+".checkpoint_type")
	f.missing(w.TinkerPath != nil, at+".tinker_path")
	if w.CheckpointType != nil && *w.CheckpointType != "training" && *w.CheckpointType != "sampler" {
		f.fail(at+".checkpoint_type", fmt.Sprintf("%q is not training or sampler", *w.CheckpointType))
	}
	return Checkpoint{
		CheckpointID:   str(w.CheckpointID),
		CheckpointType: str(w.CheckpointType),
		Time:           f.time(w.Time, at+".time"),
		TinkerPath:     str(w.TinkerPath),
		SizeBytes:      w.SizeBytes,
		Public:         w.Public != nil && *w.Public,
		ExpiresAt:      f.optTime(w.ExpiresAt, at+".expires_at"),
		TrainingRunID:  str(w.TrainingRunID),
	}
}

func (f *fieldErrs) optCheckpoint(w *checkpointWire, at string) *Checkpoint {
	if w == nil {
		return nil
	}
	cp := f.checkpoint(w, at)
	return &cp
}

func (f *fieldErrs) cursor(w *cursorWire, at string) *Cursor {
	if w == nil {
		return nil
	}
	f.missing(w.Offset != nil, at+".offset")
	f.missing(w.Limit != nil, at+".limit")
	f.missing(w.TotalCount != nil, at+".total_count")
	if f.err != nil {
		return nil
	}
	return &Cursor{Offset: *w.Offset, Limit: *w.Limit, TotalCount: *w.TotalCount}
}

func (f *fieldErrs) run(w *runWire, at string) TrainingRun {
	f.missing(w.TrainingRunID != nil, at+"training_run_id")
	f.missing(w.BaseModel != nil, at+"base_model")
	f.missing(w.ModelOwner != nil, at+"model_owner")
	f.missing(w.IsLora != nil, at+"is_lora")
	return TrainingRun{
		TrainingRunID:         str(w.TrainingRunID),
		BaseModel:             str(w.BaseModel),
		ModelOwner:            str(w.ModelOwner),
		IsLora:                w.IsLora != nil && *w.IsLora,
		Corrupted:             w.Corrupted != nil && *w.Corrupted,
		LoraRank:              w.LoraRank,
		LastRequestTime:       f.time(w.LastRequestTime, at+"last_request_time"),
		LastCheckpoint:        f.optCheckpoint(w.LastCheckpoint, at+"last_checkpoint"),
		LastSamplerCheckpoint: f.optCheckpoint(w.LastSamplerCheckpoint, at+"last_sampler_checkpoint"),
		UserMetadata:          w.UserMetadata,
	}
}

func wireDecode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &SchemaError{Reason: err.Error()}
	}
	return nil
}

// decodeTrainingRuns decodes and checks a TrainingRunsResponse.
func decodeTrainingRuns(body []byte) (*TrainingRunsResponse, error) {
	var w struct {
		TrainingRuns *[]runWire  `json:"training_runs"`
		Cursor       *cursorWire `json:"cursor"`
	}
	if err := wireDecode(body, &w); err != nil {
		return nil, err
	}
	var f fieldErrs
	f.missing(w.TrainingRuns != nil, "training_runs")
	f.missing(w.Cursor != nil, "cursor")
	out := &TrainingRunsResponse{}
	if cur := f.cursor(w.Cursor, "cursor"); cur != nil {
		out.Cursor = *cur
	}
	if w.TrainingRuns != nil {
		out.TrainingRuns = make([]TrainingRun, len(*w.TrainingRuns))
		for i := range *w.TrainingRuns {
			out.TrainingRuns[i] = f.run(&(*w.TrainingRuns)[i], fmt.Sprintf("training_runs[%d].", i))
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return out, nil
}

// decodeTrainingRun decodes and checks one TrainingRun.
func decodeTrainingRun(body []byte) (*TrainingRun, error) {
	var w runWire
	if err := wireDecode(body, &w); err != nil {
		return nil, err
	}
	var f fieldErrs
	run := f.run(&w, "")
	if f.err != nil {
		return nil, f.err
	}
	return &run, nil
}

// decodeCheckpoints decodes and checks a CheckpointsListResponse, its
// entries appended to dst (nil: a slice of their own).
func decodeCheckpoints(body []byte, dst []Checkpoint) (*CheckpointsListResponse, error) {
	if out, ok := fastCheckpoints(body, dst); ok {
		return out, nil
	}
	var w checkpointsWire
	if err := wireDecode(body, &w); err != nil {
		return nil, err
	}
	return checkCheckpoints(&w, dst)
}

// checkCheckpoints checks a decoded listing and converts it, appending
// the entries to dst.
func checkCheckpoints(w *checkpointsWire, dst []Checkpoint) (*CheckpointsListResponse, error) {
	var f fieldErrs
	f.missing(w.Checkpoints != nil, "checkpoints")
	out := &CheckpointsListResponse{Cursor: f.cursor(w.Cursor, "cursor")}
	if w.Checkpoints != nil {
		n := len(dst)
		if dst == nil {
			dst = make([]Checkpoint, 0, len(*w.Checkpoints))
		}
		out.Checkpoints = slices.Grow(dst, len(*w.Checkpoints))[:n+len(*w.Checkpoints)]
		for i := range *w.Checkpoints {
			// Checked without a field name first: naming each entry
			// would cost more than the check when nothing is wrong.
			var probe fieldErrs
			out.Checkpoints[n+i] = probe.checkpoint(&(*w.Checkpoints)[i], "")
			if probe.err != nil {
				f.checkpoint(&(*w.Checkpoints)[i], fmt.Sprintf("checkpoints[%d]", i))
				break
			}
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return out, nil
}

func validateWeightsInfo(body []byte) error {
	var s struct {
		BaseModel *string `json:"base_model"`
		IsLora    *bool   `json:"is_lora"`
	}
	if err := wireDecode(body, &s); err != nil {
		return err
	}
	var f fieldErrs
	f.missing(s.BaseModel != nil, "base_model")
	f.missing(s.IsLora != nil, "is_lora")
	return f.err
}

func validateArchive(body []byte) error {
	var s struct {
		URL     *string          `json:"url"`
		Expires *json.RawMessage `json:"expires"`
	}
	if err := wireDecode(body, &s); err != nil {
		return err
	}
	var f fieldErrs
	f.missing(s.URL != nil, "url")
	f.missing(s.Expires != nil, "expires")
	return f.err
}

// requireFields checks that the top-level object has non-null values for
// the given keys.
func requireFields(keys ...string) func([]byte) error {
	return func(body []byte) error {
		var m map[string]json.RawMessage
		if err := wireDecode(body, &m); err != nil {
			return err
		}
		if m == nil {
			return &SchemaError{Reason: "response body is not a JSON object"}
		}
		var f fieldErrs
		for _, k := range keys {
			v, ok := m[k]
			f.missing(ok && string(v) != "null", k)
		}
		return f.err
	}
}

// schemaErr fills in the endpoint path of a *SchemaError and scrubs
// credentials from its text (a decode error can quote response data).
func (c *Client) schemaErr(err error, path string) error {
	var se *SchemaError
	if errors.As(err, &se) {
		if se.Path == "" {
			se.Path = path
		}
		se.Field = c.secrets.string(se.Field)
		se.Reason = c.secrets.string(se.Reason)
	}
	return err
}
