package ops

import (
	"fmt"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Checkpoint is a checkpoint as listed, with its run when known; it
// displays like the official CLI's output.
type Checkpoint struct {
	C tinkerapi.Checkpoint
	// Run, when known (checkpoint.info), adds the LoRA details.
	Run *tinkerapi.TrainingRun
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
