package builtins

import (
	"fmt"
	"sort"
	gotime "time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/lib/time"
	"go.starlark.net/starlark"
)

// Checkpoint is a checkpoint as a Starlark value. Attributes are named like
// the API's JSON fields; displayed it looks like the official CLI's output.
type Checkpoint struct{ ops.Checkpoint }

var (
	_ RecordValue       = (*Checkpoint)(nil)
	_ JSONValue         = (*Checkpoint)(nil)
	_ starlark.HasAttrs = (*Checkpoint)(nil)
)

func (c *Checkpoint) String() string       { return fmt.Sprintf("<checkpoint %s>", c.C.TinkerPath) }
func (c *Checkpoint) Type() string         { return "checkpoint" }
func (c *Checkpoint) Freeze()              {}
func (c *Checkpoint) Truth() starlark.Bool { return true }
func (c *Checkpoint) Hash() (uint32, error) {
	return starlark.String(c.C.TinkerPath).Hash()
}

// checkpointAttrs lists attributes in API field order.
var checkpointAttrs = []string{"checkpoint_id", "checkpoint_type", "time", "tinker_path", "size_bytes", "public", "expires_at", "training_run_id", "name"}

func (c *Checkpoint) AttrNames() []string {
	names := append([]string(nil), checkpointAttrs...)
	if c.Run != nil {
		names = append(names, "is_lora", "lora_rank", "base_model")
	}
	sort.Strings(names)
	return names
}

func (c *Checkpoint) Attr(name string) (starlark.Value, error) {
	switch name {
	case "checkpoint_id":
		return starlark.String(c.C.CheckpointID), nil
	case "checkpoint_type":
		return starlark.String(c.C.CheckpointType), nil
	case "time":
		return time.Time(c.C.Time), nil
	case "tinker_path":
		return starlark.String(c.C.TinkerPath), nil
	case "size_bytes":
		return optInt64(c.C.SizeBytes), nil
	case "public":
		return starlark.Bool(c.C.Public), nil
	case "expires_at":
		return optTime(c.C.ExpiresAt), nil
	case "training_run_id":
		return starlark.String(c.C.RunID()), nil
	case "name":
		if p, err := tinkerapi.ParsePath(c.C.TinkerPath); err == nil {
			return starlark.String(p.Name), nil
		}
		return starlark.None, nil
	}
	if c.Run != nil {
		switch name {
		case "is_lora":
			return starlark.Bool(c.Run.IsLora), nil
		case "lora_rank":
			return optInt(c.Run.LoraRank), nil
		case "base_model":
			return starlark.String(c.Run.BaseModel), nil
		}
	}
	return nil, nil
}

func (c *Checkpoint) MarshalJSON() ([]byte, error) { return marshalJSON(c) }

// Run is a training run as a Starlark value.
type Run struct{ ops.Run }

var (
	_ RecordValue       = (*Run)(nil)
	_ JSONValue         = (*Run)(nil)
	_ starlark.HasAttrs = (*Run)(nil)
)

func (r *Run) String() string        { return fmt.Sprintf("<run %s>", r.R.TrainingRunID) }
func (r *Run) Type() string          { return "run" }
func (r *Run) Freeze()               {}
func (r *Run) Truth() starlark.Bool  { return true }
func (r *Run) Hash() (uint32, error) { return starlark.String(r.R.TrainingRunID).Hash() }

var runAttrs = []string{"base_model", "corrupted", "is_lora", "last_checkpoint", "last_request_time", "last_sampler_checkpoint", "lora_rank", "model_owner", "training_run_id", "user_metadata"}

func (r *Run) AttrNames() []string { return append([]string(nil), runAttrs...) }

func (r *Run) Attr(name string) (starlark.Value, error) {
	switch name {
	case "training_run_id":
		return starlark.String(r.R.TrainingRunID), nil
	case "base_model":
		return starlark.String(r.R.BaseModel), nil
	case "model_owner":
		return starlark.String(r.R.ModelOwner), nil
	case "is_lora":
		return starlark.Bool(r.R.IsLora), nil
	case "corrupted":
		return starlark.Bool(r.R.Corrupted), nil
	case "lora_rank":
		return optInt(r.R.LoraRank), nil
	case "last_request_time":
		return time.Time(r.R.LastRequestTime), nil
	case "last_checkpoint":
		return optCheckpoint(r.R.LastCheckpoint), nil
	case "last_sampler_checkpoint":
		return optCheckpoint(r.R.LastSamplerCheckpoint), nil
	case "user_metadata":
		if r.R.UserMetadata == nil {
			return starlark.None, nil
		}
		d := starlark.NewDict(len(r.R.UserMetadata))
		keys := make([]string, 0, len(r.R.UserMetadata))
		for k := range r.R.UserMetadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			_ = d.SetKey(starlark.String(k), starlark.String(r.R.UserMetadata[k]))
		}
		return d, nil
	}
	return nil, nil
}

func (r *Run) MarshalJSON() ([]byte, error) { return marshalJSON(r) }

func optInt64(p *int64) starlark.Value {
	if p == nil {
		return starlark.None
	}
	return starlark.MakeInt64(*p)
}

func optInt(p *int) starlark.Value {
	if p == nil {
		return starlark.None
	}
	return starlark.MakeInt(*p)
}

func optTime(t *gotime.Time) starlark.Value {
	if t == nil {
		return starlark.None
	}
	return time.Time(*t)
}

func optCheckpoint(c *tinkerapi.Checkpoint) starlark.Value {
	if c == nil {
		return starlark.None
	}
	return &Checkpoint{ops.Checkpoint{C: *c}}
}
