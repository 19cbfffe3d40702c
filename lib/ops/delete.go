package ops

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Deleting checkpoints, shared by checkpoint.delete and
// `tinker checkpoint delete`: which checkpoints go, the confirmation text,
// and the deletions themselves.

// deleteConcurrency is how many deletions run at once (the official CLI's 32).
const deleteConcurrency = 32

// DeleteFilter selects a run's checkpoints for deletion; an empty RunID
// means the paths were given explicitly.
type DeleteFilter struct {
	RunID         string
	Type          string // as checkpointType accepts; empty: any
	Before, After *time.Time
}

// DeletePlan is what a deletion will remove, with the lines that show it.
type DeletePlan struct {
	Paths   []string
	listing []string
	size    int64
	byRun   bool
}

// PlanDelete resolves f (when it names a run) or takes paths as given.
func PlanDelete(ctx context.Context, c *tinkerapi.Client, paths []string, f DeleteFilter, now time.Time) (*DeletePlan, error) {
	if f.RunID == "" {
		p := &DeletePlan{Paths: paths}
		for _, path := range paths {
			p.listing = append(p.listing, "  - "+path)
		}
		return p, nil
	}
	cps, err := selectForDelete(ctx, c, f)
	if err != nil {
		return nil, err
	}
	p := &DeletePlan{byRun: true}
	for _, cp := range cps {
		p.Paths = append(p.Paths, cp.TinkerPath)
		p.listing = append(p.listing, fmt.Sprintf("  - %s (%s, created %s)", cp.TinkerPath, render.SizePtr(cp.SizeBytes), render.Ago(cp.Time, now)))
		if cp.SizeBytes != nil {
			p.size += *cp.SizeBytes
		}
	}
	return p, nil
}

// Warning lists what will be deleted, ending with the official warning line.
func (p *DeletePlan) Warning() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Will delete %d checkpoint(s):\n%s\n\n", len(p.Paths), strings.Join(p.listing, "\n"))
	if p.byRun {
		fmt.Fprintf(&b, "Total size: %s\n", render.Size(p.size))
	}
	b.WriteString("WARNING: This action is permanent and cannot be undone.\n")
	return b.String()
}

// Question is the yes/no question asked after the warning.
func (p *DeletePlan) Question() string {
	return fmt.Sprintf("Are you sure you want to delete %d checkpoint(s)?", len(p.Paths))
}

// selectForDelete lists a run's checkpoints and keeps those matching f
// (times compared strictly).
func selectForDelete(ctx context.Context, c *tinkerapi.Client, f DeleteFilter) ([]tinkerapi.Checkpoint, error) {
	resp, err := c.ListRunCheckpoints(ctx, f.RunID)
	if err != nil {
		return nil, err
	}
	typ := f.Type
	if typ != "" {
		if typ, err = CheckpointType(typ); err != nil {
			return nil, err
		}
	}
	var out []tinkerapi.Checkpoint
	for _, cp := range resp.Checkpoints {
		if typ != "" && cp.CheckpointType != typ {
			continue
		}
		if f.Before != nil && !cp.Time.Before(*f.Before) {
			continue
		}
		if f.After != nil && !cp.Time.After(*f.After) {
			continue
		}
		out = append(out, cp)
	}
	return out, nil
}

// DeleteFailure is one checkpoint that could not be deleted.
type DeleteFailure struct {
	Path  string
	Error string
}

// DeleteCheckpoints deletes paths, deleteConcurrency at a time, and reports
// per path. When ctx is cancelled no new deletions start; the paths never
// attempted are returned in skipped.
func DeleteCheckpoints(ctx context.Context, c *tinkerapi.Client, paths []string, prog Progress) (deleted []string, failed []DeleteFailure, skipped []string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, deleteConcurrency)
	for i, path := range paths {
		if ctx.Err() != nil { // select below picks at random when both are ready
			skipped = append(skipped, paths[i:]...)
			break
		}
		select {
		case <-ctx.Done():
			skipped = append(skipped, paths[i:]...)
			wg.Wait()
			return deleted, failed, skipped
		case sem <- struct{}{}:
		}
		wg.Add(1)
		go func(path string) {
			defer wg.Done()
			defer func() { <-sem }()
			var err error
			if p, perr := tinkerapi.ParsePath(path); perr != nil {
				err = perr
			} else {
				// Deletions already submitted finish even if the user interrupts.
				err = c.DeleteCheckpoint(context.WithoutCancel(ctx), p.RunID, p.CheckpointID)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, DeleteFailure{Path: path, Error: APIMessage(err)})
			} else {
				deleted = append(deleted, path)
			}
			prog.Add(1)
		}(path)
	}
	wg.Wait()
	return deleted, failed, skipped
}

// DeleteResult is the outcome of a deletion, a dry run or a refusal.
type DeleteResult struct {
	DryRun    bool
	Cancelled bool // the user answered no
	Planned   []string
	Deleted   []string
	Failed    []DeleteFailure
	Skipped   []string
	// NoMatch, when set, says that the filters matched nothing; the result
	// then displays as this line instead of an empty table.
	NoMatch string
}

// Table lists every checkpoint with what happened to it.
func (d *DeleteResult) Table(now gotime.Time) *render.Table {
	if d.NoMatch != "" {
		return nil
	}
	t := &render.Table{Columns: []render.Column{{Header: "Checkpoint", Kind: render.Path}, {Header: "Result"}}}
	if d.Cancelled {
		t.Title = "Deletion cancelled: nothing was deleted"
		for _, p := range d.Planned {
			t.Rows = append(t.Rows, []string{p, "kept"})
		}
		return t
	}
	if d.DryRun {
		t.Title = fmt.Sprintf("Would delete %d checkpoint(s) (dry run)", len(d.Planned))
		for _, p := range d.Planned {
			t.Rows = append(t.Rows, []string{p, "would delete"})
		}
		return t
	}
	t.Title = fmt.Sprintf("Deleted %d checkpoint(s)", len(d.Deleted))
	if len(d.Failed) > 0 {
		t.Title += fmt.Sprintf(", %d failed", len(d.Failed))
	}
	if len(d.Skipped) > 0 {
		t.Title += fmt.Sprintf(", %d not attempted (interrupted)", len(d.Skipped))
	}
	for _, p := range d.Deleted {
		t.Rows = append(t.Rows, []string{p, "deleted"})
	}
	for _, f := range d.Failed {
		t.Rows = append(t.Rows, []string{f.Path, "failed: " + f.Error})
	}
	for _, p := range d.Skipped {
		t.Rows = append(t.Rows, []string{p, "not attempted"})
	}
	return t
}

// JSON is the official CLI's result object.
func (d *DeleteResult) JSON() any {
	failed := make([]any, len(d.Failed))
	for i, f := range d.Failed {
		failed[i] = render.Object{{Key: "tinker_path", Value: f.Path}, {Key: "error", Value: f.Error}}
	}
	obj := render.Object{{Key: "deleted_count", Value: len(d.Deleted)}, {Key: "failed", Value: failed}}
	if d.DryRun {
		obj = append(obj, render.Member{Key: "dry_run", Value: true}, render.Member{Key: "planned", Value: d.Planned})
	}
	if d.Cancelled {
		obj = append(obj, render.Member{Key: "cancelled", Value: true})
	}
	if len(d.Skipped) > 0 {
		obj = append(obj, render.Member{Key: "skipped", Value: d.Skipped})
	}
	return obj
}
