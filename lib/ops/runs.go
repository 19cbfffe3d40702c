package ops

import (
	"context"
	"fmt"
	"sort"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// ListRuns pages through training runs like the official CLI (batches of
// 100, several in flight). limit <= 0 means all.
func ListRuns(ctx context.Context, c *tinkerapi.Client, limit int, scope string, progress func(target int) Progress) (runs []tinkerapi.TrainingRun, total int, err error) {
	const batch = 100
	first := batch
	if limit > 0 {
		first = min(batch, limit)
	}
	resp, err := c.ListTrainingRuns(ctx, first, 0, scope)
	if err != nil {
		return nil, 0, err
	}
	total = resp.Cursor.TotalCount
	var prog Progress = noProgress{}
	target := total
	if limit > 0 {
		target = min(limit, total)
	}
	if progress != nil && len(resp.TrainingRuns) < target {
		prog = progress(target)
	}
	defer prog.Finish()
	runs, err = fetchPages(ctx, resp.TrainingRuns, total, limit, batch, prog, func(ctx context.Context, l, off int, dst []tinkerapi.TrainingRun) ([]tinkerapi.TrainingRun, error) {
		r, err := c.ListTrainingRuns(ctx, l, off, scope)
		if err != nil {
			return nil, err
		}
		return append(dst, r.TrainingRuns...), nil
	})
	return runs, total, err
}

// Run is a training run, displayed like the official CLI's.
type Run struct {
	R tinkerapi.TrainingRun
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
