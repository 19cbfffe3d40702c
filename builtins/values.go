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
	{name: "base_model", doc: "the run's base model (checkpoint.info() and checkpoint.list(run_id=...) only)", value: func(c *Checkpoint) starlark.Value { return starlark.String(c.Run.BaseModel) }, only: hasRun},
	{name: "checkpoint_id", doc: `its id within the run, e.g. "sampler_weights/final"`, value: func(c *Checkpoint) starlark.Value { return starlark.String(c.C.CheckpointID) }},
	{name: "checkpoint_type", doc: `"training" or "sampler"`, value: func(c *Checkpoint) starlark.Value { return starlark.String(c.C.CheckpointType) }},
	{name: "expires_at", doc: "when it expires (a time), or None if never", value: func(c *Checkpoint) starlark.Value { return optTime(c.C.ExpiresAt) }},
	{name: "is_lora", doc: "whether the run trains a LoRA adapter (checkpoint.info() and checkpoint.list(run_id=...) only)", value: func(c *Checkpoint) starlark.Value { return starlark.Bool(c.Run.IsLora) }, only: hasRun},
	{name: "lora_rank", doc: "the run's LoRA rank, or None (checkpoint.info() and checkpoint.list(run_id=...) only)", value: func(c *Checkpoint) starlark.Value { return optInt(c.Run.LoraRank) }, only: hasRun},
	{name: "name", doc: `the last part of its path, e.g. "final"`, value: func(c *Checkpoint) starlark.Value {
		if p, err := tinkerapi.ParsePath(c.C.TinkerPath); err == nil {
			return starlark.String(p.Name)
		}
		return starlark.None
	}},
	{name: "public", doc: "whether anyone with the path can use it", value: func(c *Checkpoint) starlark.Value { return starlark.Bool(c.C.Public) }},
	{name: "size_bytes", doc: "its size in bytes, or None if unknown", value: func(c *Checkpoint) starlark.Value { return optInt64(c.C.SizeBytes) }},
	{name: "time", doc: "when it was saved (a time)", value: func(c *Checkpoint) starlark.Value { return time.Time(c.C.Time) }},
	{name: "tinker_path", doc: "its tinker:// path, what sample() and download() take", value: func(c *Checkpoint) starlark.Value { return starlark.String(c.C.TinkerPath) }},
	{name: "training_run_id", doc: "the id of the run it belongs to", value: func(c *Checkpoint) starlark.Value { return starlark.String(c.C.RunID()) }},
}

// hasRun says whether a checkpoint carries its run (checkpoint.info and
// checkpoint.list(run_id=...) give one): only then has it the run attributes.
func hasRun(c *Checkpoint) bool { return c.Run != nil }

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
	{name: "base_model", doc: "the model it fine-tunes", value: func(r *Run) starlark.Value { return starlark.String(r.R.BaseModel) }},
	{name: "corrupted", doc: "whether the service marked the run corrupted", value: func(r *Run) starlark.Value { return starlark.Bool(r.R.Corrupted) }},
	{name: "is_lora", doc: "whether it trains a LoRA adapter", value: func(r *Run) starlark.Value { return starlark.Bool(r.R.IsLora) }},
	{name: "last_checkpoint", doc: "its newest training checkpoint, or None", value: func(r *Run) starlark.Value { return optCheckpoint(r.R.LastCheckpoint) }},
	{name: "last_request_time", doc: "when it last received a request (a time)", value: func(r *Run) starlark.Value { return time.Time(r.R.LastRequestTime) }},
	{name: "last_sampler_checkpoint", doc: "its newest sampler checkpoint, or None", value: func(r *Run) starlark.Value { return optCheckpoint(r.R.LastSamplerCheckpoint) }},
	{name: "lora_rank", doc: "its LoRA rank, or None", value: func(r *Run) starlark.Value { return optInt(r.R.LoraRank) }},
	{name: "model_owner", doc: "who owns it", value: func(r *Run) starlark.Value { return starlark.String(r.R.ModelOwner) }},
	{name: "training_run_id", doc: "its id", value: func(r *Run) starlark.Value { return starlark.String(r.R.TrainingRunID) }},
	{name: "user_metadata", doc: "a dict of the metadata given at creation, or None", value: func(r *Run) starlark.Value { return metadataDict(r.R.UserMetadata) }},
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
