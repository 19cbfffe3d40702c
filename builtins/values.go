package builtins

import (
	"fmt"
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

func (c *Checkpoint) AttrNames() []string { return checkpointAttrs.names(c) }
func (c *Checkpoint) Attr(name string) (starlark.Value, error) {
	v, err := checkpointAttrs.get(c, name)
	if v == nil && err == nil && c.Run == nil && (name == "base_model" || name == "is_lora" || name == "lora_rank") {
		// The list of all checkpoints does not carry their runs' details.
		return nil, starlark.NoSuchAttrError(fmt.Sprintf("this checkpoint came without its run's details, so it has no .%[1]s: "+
			"list a run's checkpoints (checkpoint.list(run_id=...)) or ask the run (run.info(c.training_run_id).%[1]s)", name))
	}
	return v, err
}

// checkpointAttrs are named like the API's JSON fields.
var checkpointAttrs = attrTable[*Checkpoint]{
	runOnly(field("base_model", "the run's base model (checkpoint.info() and checkpoint.list(run_id=...) only)", func(c *Checkpoint) starlark.Value { return starlark.String(c.Run.BaseModel) })),
	field("checkpoint_id", `its id within the run, e.g. "sampler_weights/final"`, func(c *Checkpoint) starlark.Value { return starlark.String(c.C.CheckpointID) }),
	field("checkpoint_type", `"training" or "sampler"`, func(c *Checkpoint) starlark.Value { return starlark.String(c.C.CheckpointType) }),
	field("expires_at", "when it expires (a time), or None if never", func(c *Checkpoint) starlark.Value { return optTime(c.C.ExpiresAt) }),
	runOnly(field("is_lora", "whether the run trains a LoRA adapter (checkpoint.info() and checkpoint.list(run_id=...) only)", func(c *Checkpoint) starlark.Value { return starlark.Bool(c.Run.IsLora) })),
	runOnly(field("lora_rank", "the run's LoRA rank, or None (checkpoint.info() and checkpoint.list(run_id=...) only)", func(c *Checkpoint) starlark.Value { return optInt(c.Run.LoraRank) })),
	field("name", `the last part of its path, e.g. "final"`, func(c *Checkpoint) starlark.Value {
		if p, err := tinkerapi.ParsePath(c.C.TinkerPath); err == nil {
			return starlark.String(p.Name)
		}
		return starlark.None
	}),
	field("public", "whether anyone with the path can use it", func(c *Checkpoint) starlark.Value { return starlark.Bool(c.C.Public) }),
	field("size_bytes", "its size in bytes, or None if unknown", func(c *Checkpoint) starlark.Value { return optInt64(c.C.SizeBytes) }),
	field("time", "when it was saved (a time)", func(c *Checkpoint) starlark.Value { return time.Time(c.C.Time) }),
	field("tinker_path", "its tinker:// path, what sample() and download() take", func(c *Checkpoint) starlark.Value { return starlark.String(c.C.TinkerPath) }),
	field("training_run_id", "the id of the run it belongs to", func(c *Checkpoint) starlark.Value { return starlark.String(c.C.RunID()) }),
}

// runOnly marks an attribute that only a checkpoint with its run has.
func runOnly(a attr[*Checkpoint]) attr[*Checkpoint] {
	a.only = func(c *Checkpoint) bool { return c.Run != nil }
	return a
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

func (r *Run) AttrNames() []string                      { return runAttrs.names(r) }
func (r *Run) Attr(name string) (starlark.Value, error) { return runAttrs.get(r, name) }

var runAttrs = attrTable[*Run]{
	field("base_model", "the model it fine-tunes", func(r *Run) starlark.Value { return starlark.String(r.R.BaseModel) }),
	field("corrupted", "whether the service marked the run corrupted", func(r *Run) starlark.Value { return starlark.Bool(r.R.Corrupted) }),
	field("is_lora", "whether it trains a LoRA adapter", func(r *Run) starlark.Value { return starlark.Bool(r.R.IsLora) }),
	field("last_checkpoint", "its newest training checkpoint, or None", func(r *Run) starlark.Value { return optCheckpoint(r.R.LastCheckpoint) }),
	field("last_request_time", "when it last received a request (a time)", func(r *Run) starlark.Value { return time.Time(r.R.LastRequestTime) }),
	field("last_sampler_checkpoint", "its newest sampler checkpoint, or None", func(r *Run) starlark.Value { return optCheckpoint(r.R.LastSamplerCheckpoint) }),
	field("lora_rank", "its LoRA rank, or None", func(r *Run) starlark.Value { return optInt(r.R.LoraRank) }),
	field("model_owner", "who owns it", func(r *Run) starlark.Value { return starlark.String(r.R.ModelOwner) }),
	field("training_run_id", "its id", func(r *Run) starlark.Value { return starlark.String(r.R.TrainingRunID) }),
	field("user_metadata", "a dict of the metadata given at creation, or None", func(r *Run) starlark.Value { return metadataDict(r.R.UserMetadata) }),
}

// metadataDict is a run's metadata as a dict with sorted keys, or None.
func metadataDict(m map[string]string) starlark.Value {
	if m == nil {
		return starlark.None
	}
	return sortedDict(m, func(s string) starlark.Value { return starlark.String(s) })
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
