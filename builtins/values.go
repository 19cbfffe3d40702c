package builtins

import (
	"fmt"
	"sort"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/lib/time"
	"go.starlark.net/starlark"
)

// Checkpoint is a checkpoint as a Starlark value. Attributes are named like
// the API's JSON fields; displayed it looks like the official CLI's output.
type Checkpoint struct {
	C tinkerapi.Checkpoint
	// Run, when known (checkpoint.info, checkpoint.list(run_id=...)),
	// adds the LoRA details.
	Run *tinkerapi.TrainingRun
}

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
	switch name {
	case "is_lora", "lora_rank", "base_model":
		// The list of all checkpoints does not carry their runs' details.
		return nil, starlark.NoSuchAttrError(fmt.Sprintf("this checkpoint came without its run's details, so it has no .%[1]s: "+
			"list a run's checkpoints (checkpoint.list(run_id=...)) or ask the run (run.info(c.training_run_id).%[1]s)", name))
	}
	return nil, nil
}

func (c *Checkpoint) RowColumns() []render.Column {
	return []render.Column{{Header: "Checkpoint ID", Kind: render.ID}, {Header: "Type"}, {Header: "Size", Kind: render.Number}, {Header: "Public"},
		{Header: "Created", Kind: render.Time}, {Header: "Expires", Kind: render.Time}, {Header: "Path", Kind: render.Path}}
}

func (c *Checkpoint) Row(now gotime.Time) []string {
	return []string{
		c.C.CheckpointID,
		c.C.CheckpointType,
		render.SizePtr(c.C.SizeBytes),
		render.YesNo(c.C.Public),
		render.Ago(c.C.Time, now),
		render.AgoPtr(c.C.ExpiresAt, now, "Never"),
		c.C.TinkerPath,
	}
}

func (c *Checkpoint) ListTitle(n int) string { return Plural(n, "checkpoint", "checkpoints") }

// Record shows the rows of the official `checkpoint info` table.
func (c *Checkpoint) Record(now gotime.Time) *render.Record {
	r := &render.Record{Title: "Checkpoint: " + c.C.CheckpointID}
	add := func(k, v string) { r.Fields = append(r.Fields, render.Field{Name: k, Value: v}) }
	add("Checkpoint ID", c.C.CheckpointID)
	add("Type", c.C.CheckpointType)
	add("Tinker Path", c.C.TinkerPath)
	if c.C.SizeBytes != nil {
		add("Size", render.Size(*c.C.SizeBytes))
	}
	add("Public", render.YesNo(c.C.Public))
	add("Created", render.Ago(c.C.Time, now))
	add("Expires", render.AgoPtr(c.C.ExpiresAt, now, "Never"))
	add("Training Run ID", c.C.RunID())
	if c.Run != nil {
		add("LoRA", loraInfo(c.Run))
	}
	return r
}

// JSON gives the official CLI's checkpoint object (plus is_lora and
// lora_rank when the run is known, as `checkpoint info` prints).
func (c *Checkpoint) JSON() any {
	obj := CheckpointJSON(&c.C)
	if c.Run != nil {
		obj = append(obj, render.Member{Key: "is_lora", Value: c.Run.IsLora}, render.Member{Key: "lora_rank", Value: c.Run.LoraRank})
	}
	return obj
}

func (c *Checkpoint) MarshalJSON() ([]byte, error) { return marshalJSON(c) }

// CheckpointJSON is the official CLI's JSON object for a checkpoint.
func CheckpointJSON(c *tinkerapi.Checkpoint) render.Object {
	return render.Object{
		{Key: "checkpoint_id", Value: c.CheckpointID},
		{Key: "checkpoint_type", Value: c.CheckpointType},
		{Key: "time", Value: render.PyTime(c.Time)},
		{Key: "tinker_path", Value: c.TinkerPath},
		{Key: "size_bytes", Value: c.SizeBytes},
		{Key: "public", Value: c.Public},
		{Key: "expires_at", Value: pyTimePtr(c.ExpiresAt)},
	}
}

func pyTimePtr(t *gotime.Time) any {
	if t == nil {
		return nil
	}
	return render.PyTime(*t)
}

func loraInfo(r *tinkerapi.TrainingRun) string {
	switch {
	case r.IsLora && r.LoraRank != nil && *r.LoraRank != 0:
		return fmt.Sprintf("Yes (Rank %d)", *r.LoraRank)
	case r.IsLora:
		return "Yes"
	}
	return "No"
}

// Run is a training run as a Starlark value.
type Run struct {
	R tinkerapi.TrainingRun
}

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

// RunColumns are the official `run list` column keys, headers and cells.
var RunColumns = []struct {
	Key, Header string
	Kind        render.Kind
	Cell        func(r *tinkerapi.TrainingRun, now gotime.Time) string
}{
	{"id", "Run ID", render.ID, func(r *tinkerapi.TrainingRun, _ gotime.Time) string { return r.TrainingRunID }},
	{"model", "Base Model", render.ID, func(r *tinkerapi.TrainingRun, _ gotime.Time) string { return r.BaseModel }},
	{"owner", "Owner", render.ID, func(r *tinkerapi.TrainingRun, _ gotime.Time) string { return r.ModelOwner }},
	{"lora", "LoRA", render.Text, func(r *tinkerapi.TrainingRun, _ gotime.Time) string {
		switch {
		case r.IsLora && r.LoraRank != nil && *r.LoraRank != 0:
			return fmt.Sprintf("Rank %d", *r.LoraRank)
		case r.IsLora:
			return "Yes"
		}
		return "No"
	}},
	{"updated", "Last Update", render.Time, func(r *tinkerapi.TrainingRun, now gotime.Time) string { return render.Ago(r.LastRequestTime, now) }},
	{"status", "Status", render.Text, func(r *tinkerapi.TrainingRun, _ gotime.Time) string { return status(r) }},
	{"checkpoint", "Last Checkpoint", render.ID, func(r *tinkerapi.TrainingRun, _ gotime.Time) string {
		if r.LastCheckpoint == nil {
			return "None"
		}
		return r.LastCheckpoint.CheckpointID
	}},
	{"checkpoint_time", "Checkpoint Time", render.Time, func(r *tinkerapi.TrainingRun, now gotime.Time) string {
		if r.LastCheckpoint == nil {
			return "N/A"
		}
		return render.Ago(r.LastCheckpoint.Time, now)
	}},
}

// DefaultRunColumns are shown when no columns are chosen.
var DefaultRunColumns = []string{"id", "model", "lora", "updated", "status"}

func status(r *tinkerapi.TrainingRun) string {
	if r.Corrupted {
		return "Failed"
	}
	return "OK"
}

func (r *Run) RowColumns() []render.Column {
	cols := make([]render.Column, 0, len(DefaultRunColumns))
	for _, k := range DefaultRunColumns {
		for _, c := range RunColumns {
			if c.Key == k {
				cols = append(cols, render.Column{Header: c.Header, Kind: c.Kind})
			}
		}
	}
	return cols
}

func (r *Run) Row(now gotime.Time) []string {
	cells := make([]string, 0, len(DefaultRunColumns))
	for _, k := range DefaultRunColumns {
		for _, c := range RunColumns {
			if c.Key == k {
				cells = append(cells, c.Cell(&r.R, now))
			}
		}
	}
	return cells
}

func (r *Run) ListTitle(n int) string { return Plural(n, "training run", "training runs") }

// Record shows the rows of the official `run info` table.
func (r *Run) Record(now gotime.Time) *render.Record {
	rec := &render.Record{Title: "Training Run: " + r.R.TrainingRunID}
	add := func(k, v string) { rec.Fields = append(rec.Fields, render.Field{Name: k, Value: v}) }
	add("Run ID", r.R.TrainingRunID)
	add("Base Model", r.R.BaseModel)
	add("Owner", r.R.ModelOwner)
	add("LoRA", loraInfo(&r.R))
	add("Last Update", render.Ago(r.R.LastRequestTime, now))
	add("Status", status(&r.R))
	for _, ck := range []struct {
		label string
		c     *tinkerapi.Checkpoint
	}{{"Last Training Checkpoint", r.R.LastCheckpoint}, {"Last Sampler Checkpoint", r.R.LastSamplerCheckpoint}} {
		if ck.c == nil {
			continue
		}
		add(ck.label, ck.c.CheckpointID)
		add("  - Time", render.Ago(ck.c.Time, now))
		add("  - Path", ck.c.TinkerPath)
	}
	if len(r.R.UserMetadata) > 0 {
		add("Metadata", "")
		keys := make([]string, 0, len(r.R.UserMetadata))
		for k := range r.R.UserMetadata {
			keys = append(keys, k)
		}
		sort.Strings(keys) // JSON objects arrive unordered in Go maps
		for _, k := range keys {
			add("  - "+k, r.R.UserMetadata[k])
		}
	}
	return rec
}

// JSON is the official CLI's TrainingRun object.
func (r *Run) JSON() any { return RunJSON(&r.R) }

func (r *Run) MarshalJSON() ([]byte, error) { return marshalJSON(r) }

// RunJSON is the official CLI's JSON object for a training run.
func RunJSON(r *tinkerapi.TrainingRun) render.Object {
	ckpt := func(c *tinkerapi.Checkpoint) any {
		if c == nil {
			return nil
		}
		return CheckpointJSON(c)
	}
	var meta any
	if r.UserMetadata != nil {
		meta = r.UserMetadata
	}
	return render.Object{
		{Key: "training_run_id", Value: r.TrainingRunID},
		{Key: "base_model", Value: r.BaseModel},
		{Key: "model_owner", Value: r.ModelOwner},
		{Key: "is_lora", Value: r.IsLora},
		{Key: "corrupted", Value: r.Corrupted},
		{Key: "lora_rank", Value: r.LoraRank},
		{Key: "last_request_time", Value: render.PyTime(r.LastRequestTime)},
		{Key: "last_checkpoint", Value: ckpt(r.LastCheckpoint)},
		{Key: "last_sampler_checkpoint", Value: ckpt(r.LastSamplerCheckpoint)},
		{Key: "user_metadata", Value: meta},
	}
}

// Count is a number of things in words: "1 token", "0 tokens", "5 tokens".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Plural titles a list: "No X found", "1 x", "N xs".
func Plural(n int, one, many string) string {
	switch n {
	case 0:
		return "No " + many + " found"
	}
	return Count(n, one, many)
}

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
	return &Checkpoint{C: *c}
}
