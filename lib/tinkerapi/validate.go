package tinkerapi

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The SDK validates responses strictly: a missing or null required field
// is an error, and the CLI reports it as "Data returned by API invalid for
// expected schema." (CLI spec §3.4). Go's decoder cannot tell a missing
// field from a zero value, so each response is decoded a second time into
// a shadow type whose required fields are pointers.

type cursorShadow struct {
	Offset     *int `json:"offset"`
	Limit      *int `json:"limit"`
	TotalCount *int `json:"total_count"`
}

type checkpointShadow struct {
	CheckpointID   *string          `json:"checkpoint_id"`
	CheckpointType *string          `json:"checkpoint_type"`
	Time           *json.RawMessage `json:"time"`
	TinkerPath     *string          `json:"tinker_path"`
}

type runShadow struct {
	TrainingRunID         *string           `json:"training_run_id"`
	BaseModel             *string           `json:"base_model"`
	ModelOwner            *string           `json:"model_owner"`
	IsLora                *bool             `json:"is_lora"`
	LastRequestTime       *json.RawMessage  `json:"last_request_time"`
	LastCheckpoint        *checkpointShadow `json:"last_checkpoint"`
	LastSamplerCheckpoint *checkpointShadow `json:"last_sampler_checkpoint"`
}

// fieldErrs collects the first problem found.
type fieldErrs struct{ err error }

func (f *fieldErrs) missing(present bool, field string) {
	if !present && f.err == nil {
		f.err = &SchemaError{Field: field, Reason: "required field missing or null"}
	}
}

func (f *fieldErrs) checkpoint(c *checkpointShadow, at string) {
	f.missing(c.CheckpointID != nil, at+".checkpoint_id")
	f.missing(c.CheckpointType != nil, at+".checkpoint_type")
	f.missing(c.Time != nil, at+".time")
	f.missing(c.TinkerPath != nil, at+".tinker_path")
	if c.CheckpointType != nil && *c.CheckpointType != "training" && *c.CheckpointType != "sampler" && f.err == nil {
		f.err = &SchemaError{Field: at + ".checkpoint_type", Reason: fmt.Sprintf("%q is not training or sampler", *c.CheckpointType)}
	}
}

func (f *fieldErrs) cursor(c *cursorShadow, at string) {
	f.missing(c.Offset != nil, at+".offset")
	f.missing(c.Limit != nil, at+".limit")
	f.missing(c.TotalCount != nil, at+".total_count")
}

func (f *fieldErrs) run(r *runShadow, at string) {
	f.missing(r.TrainingRunID != nil, at+"training_run_id")
	f.missing(r.BaseModel != nil, at+"base_model")
	f.missing(r.ModelOwner != nil, at+"model_owner")
	f.missing(r.IsLora != nil, at+"is_lora")
	f.missing(r.LastRequestTime != nil, at+"last_request_time")
	if r.LastCheckpoint != nil {
		f.checkpoint(r.LastCheckpoint, at+"last_checkpoint")
	}
	if r.LastSamplerCheckpoint != nil {
		f.checkpoint(r.LastSamplerCheckpoint, at+"last_sampler_checkpoint")
	}
}

func shadowDecode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &SchemaError{Reason: err.Error()}
	}
	return nil
}

func validateTrainingRuns(body []byte) error {
	var s struct {
		TrainingRuns *[]runShadow  `json:"training_runs"`
		Cursor       *cursorShadow `json:"cursor"`
	}
	if err := shadowDecode(body, &s); err != nil {
		return err
	}
	var f fieldErrs
	f.missing(s.TrainingRuns != nil, "training_runs")
	f.missing(s.Cursor != nil, "cursor")
	if s.Cursor != nil {
		f.cursor(s.Cursor, "cursor")
	}
	if s.TrainingRuns != nil {
		for i := range *s.TrainingRuns {
			f.run(&(*s.TrainingRuns)[i], fmt.Sprintf("training_runs[%d].", i))
		}
	}
	return f.err
}

func validateTrainingRun(body []byte) error {
	var s runShadow
	if err := shadowDecode(body, &s); err != nil {
		return err
	}
	var f fieldErrs
	f.run(&s, "")
	return f.err
}

func validateCheckpoints(body []byte) error {
	var s struct {
		Checkpoints *[]checkpointShadow `json:"checkpoints"`
		Cursor      *cursorShadow       `json:"cursor"`
	}
	if err := shadowDecode(body, &s); err != nil {
		return err
	}
	var f fieldErrs
	f.missing(s.Checkpoints != nil, "checkpoints")
	if s.Cursor != nil {
		f.cursor(s.Cursor, "cursor")
	}
	if s.Checkpoints != nil {
		for i := range *s.Checkpoints {
			f.checkpoint(&(*s.Checkpoints)[i], fmt.Sprintf("checkpoints[%d]", i))
		}
	}
	return f.err
}

func validateWeightsInfo(body []byte) error {
	var s struct {
		BaseModel *string `json:"base_model"`
		IsLora    *bool   `json:"is_lora"`
	}
	if err := shadowDecode(body, &s); err != nil {
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
	if err := shadowDecode(body, &s); err != nil {
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
		if err := shadowDecode(body, &m); err != nil {
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

func withPath(err error, path string) error {
	var se *SchemaError
	if errors.As(err, &se) && se.Path == "" {
		se.Path = path
	}
	return err
}

func decodeJSON(path string, body []byte, out any) error {
	if err := json.Unmarshal(body, out); err != nil {
		return &SchemaError{Path: path, Reason: err.Error()}
	}
	return nil
}
