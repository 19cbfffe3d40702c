package ops

import (
	"context"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	gotime "time"

	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Checkpoint operations shared by the checkpoint module and
// `tinker checkpoint`.

// checkpointBatch is the page size of the caller's checkpoint listing.
const checkpointBatch = 1000

// ListCheckpoints returns a run's checkpoints (runID set; one request, no
// paging) or the caller's checkpoints newest first, paging like the
// official CLI with up to pageConcurrency pages in flight. limit <= 0 means
// all. total is the server's count (or the number returned when unknown).
// progress, when set, is called once with the number to be fetched if more
// than one page is needed.
func ListCheckpoints(ctx context.Context, c *tinkerapi.Client, runID string, limit int, progress func(target int) Progress) (cps []tinkerapi.Checkpoint, total int, err error) {
	if runID != "" {
		resp, err := c.ListRunCheckpoints(ctx, runID)
		if err != nil {
			return nil, 0, err
		}
		return resp.Checkpoints, len(resp.Checkpoints), nil
	}
	const batch = checkpointBatch
	first := batch
	if limit > 0 {
		first = min(batch, limit)
	}
	resp, err := c.ListUserCheckpoints(ctx, first, 0)
	if err != nil {
		return nil, 0, err
	}
	total = -1
	if resp.Cursor != nil {
		total = resp.Cursor.TotalCount
	}
	var prog Progress = noProgress{}
	if total >= 0 && progress != nil {
		target := total
		if limit > 0 {
			target = min(limit, total)
		}
		if len(resp.Checkpoints) < target {
			prog = progress(target)
		}
	}
	defer prog.Finish()
	cps, err = fetchPages(ctx, resp.Checkpoints, total, limit, batch, prog, func(ctx context.Context, l, off int, dst []tinkerapi.Checkpoint) ([]tinkerapi.Checkpoint, error) {
		r, err := c.ListUserCheckpointsInto(ctx, l, off, dst)
		if err != nil {
			return nil, err
		}
		return r.Checkpoints, nil
	})
	if total < 0 {
		total = len(cps)
	}
	return cps, total, err
}

// ListCheckpointsPacked is ListCheckpoints for a listing printed whole
// (`checkpoint list -f json`): the same requests, checks and all-or-nothing
// failure, with the caller's pages held as tinkerapi.CheckpointPacks
// (~40 bytes an entry instead of ~210, for a listing's memory is
// touched for the first time: page faults). The checkpoints are yielded
// in order, each valid until the next.
func ListCheckpointsPacked(ctx context.Context, c *tinkerapi.Client, runID string, limit int) (iter.Seq[*tinkerapi.Checkpoint], error) {
	if runID != "" {
		cps, _, err := ListCheckpoints(ctx, c, runID, limit, nil)
		if err != nil {
			return nil, err
		}
		return func(yield func(*tinkerapi.Checkpoint) bool) {
			for i := range cps {
				if !yield(&cps[i]) {
					return
				}
			}
		}, nil
	}
	const batch = checkpointBatch
	first := batch
	if limit > 0 {
		first = min(batch, limit)
	}
	pack, cursor, err := c.ListUserCheckpointsPacked(ctx, first, 0)
	if err != nil {
		return nil, err
	}
	total := -1
	if cursor != nil {
		total = cursor.TotalCount
	}
	// fetchPages pages and counts; the entries it holds are empty
	// structs (no memory), the packs are kept here by offset. The
	// listing is the packs in offset order up to its count: the pages
	// fetchPages drops (after a short one) come last.
	var mu sync.Mutex
	packs := map[int]tinkerapi.CheckpointPack{0: pack}
	counted, err := fetchPages(ctx, make([]struct{}, pack.Len()), total, limit, batch, noProgress{},
		func(ctx context.Context, l, off int, dst []struct{}) ([]struct{}, error) {
			p, _, err := c.ListUserCheckpointsPacked(ctx, l, off)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			packs[off] = p
			mu.Unlock()
			return append(dst, make([]struct{}, p.Len())...), nil
		})
	if err != nil {
		return nil, err
	}
	offs := slices.Sorted(maps.Keys(packs))
	n := len(counted)
	return func(yield func(*tinkerapi.Checkpoint) bool) {
		left := n
		for _, off := range offs {
			p := packs[off]
			for c := range p.All() {
				if left == 0 || !yield(c) {
					return
				}
				left--
			}
		}
	}, nil
}

// NewestCheckpoints returns the newest limit (<= 0: all) checkpoints of
// one run (runID set) or of the caller, of type typ when set ("training" or
// "sampler"), newest first, and how many more match: exact is false when
// pages were left unread because the limit was reached, and more then only
// counts the matches seen.
func NewestCheckpoints(ctx context.Context, c *tinkerapi.Client, runID, typ string, limit int, progress func(target int) Progress) (cps []tinkerapi.Checkpoint, more int, exact bool, err error) {
	keep := func(cp *tinkerapi.Checkpoint) bool { return typ == "" || cp.CheckpointType == typ }
	switch {
	case runID != "":
		resp, err := c.ListRunCheckpoints(ctx, runID)
		if err != nil {
			return nil, 0, false, err
		}
		for i := range resp.Checkpoints {
			if keep(&resp.Checkpoints[i]) {
				cps = append(cps, resp.Checkpoints[i])
			}
		}
		// Ties keep the server's order, as in the caller's listing.
		slices.SortStableFunc(cps, func(a, b tinkerapi.Checkpoint) int { return b.Time.Compare(a.Time) })
		if limit > 0 && len(cps) > limit {
			return cps[:limit], len(cps) - limit, true, nil
		}
		return cps, 0, true, nil
	case typ == "" || limit <= 0:
		all, total, err := ListCheckpoints(ctx, c, "", limit, progress)
		if err != nil {
			return nil, 0, false, err
		}
		if typ == "" {
			return all, total - len(all), true, nil
		}
		for i := range all {
			if keep(&all[i]) {
				cps = append(cps, all[i])
			}
		}
		return cps, 0, true, nil
	}
	return firstMatching(ctx, limit, checkpointBatch, keep, func(ctx context.Context, l, off int) ([]tinkerapi.Checkpoint, int, error) {
		r, err := c.ListUserCheckpoints(ctx, l, off)
		if err != nil {
			return nil, 0, err
		}
		total := -1
		if r.Cursor != nil {
			total = r.Cursor.TotalCount
		}
		return r.Checkpoints, total, nil
	})
}

// FindCheckpoint looks a path up in its run's checkpoint list, as the
// official `checkpoint info` does, and fetches the run.
func FindCheckpoint(ctx context.Context, c *tinkerapi.Client, path string) (*Checkpoint, error) {
	if err := tinkerapi.CheckScheme(path, "weights"); err != nil {
		return nil, err
	}
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		return nil, UserErr("Invalid checkpoint path: "+err.Error(), "Checkpoint paths should be in the format: tinker://run-id/weights/0001")
	}
	resp, err := c.ListRunCheckpoints(ctx, p.RunID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, UserErr("Failed to retrieve checkpoint: "+APIMessage(err), "")
	}
	for i := range resp.Checkpoints {
		if resp.Checkpoints[i].TinkerPath == path {
			run, err := c.GetTrainingRun(ctx, p.RunID, "owned")
			if err != nil {
				return nil, APIErr(err)
			}
			return &Checkpoint{C: resp.Checkpoints[i], Run: run}, nil
		}
	}
	return nil, UserErr("Checkpoint not found: "+path, "")
}

// Publish makes a checkpoint public (on) or private.
func Publish(ctx context.Context, c *tinkerapi.Client, path string, on bool) error {
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		return err
	}
	if on {
		return c.PublishCheckpoint(ctx, p.RunID, p.CheckpointID)
	}
	return c.UnpublishCheckpoint(ctx, p.RunID, p.CheckpointID)
}

// SetTTL sets (seconds) or clears (nil) a checkpoint's expiry.
func SetTTL(ctx context.Context, c *tinkerapi.Client, path string, seconds *int64) error {
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		return err
	}
	return c.SetCheckpointTTL(ctx, p.RunID, p.CheckpointID, seconds)
}

// ParseDate parses --before/--after values like Python's fromisoformat:
// date-only means midnight UTC, no zone means UTC, Z and offsets honoured.
func ParseDate(s string) (gotime.Time, error) {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "Z") {
		s = strings.TrimSuffix(s, "Z") + "+00:00"
	}
	layouts := []string{
		"2006-01-02", "20060102",
		"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999999",
		"2006-01-02T15:04Z07:00", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05.999999999Z07:00",
	}
	norm := s
	if len(norm) > 10 && norm[10] != 'T' {
		norm = norm[:10] + "T" + norm[11:] // any single separator
	}
	for _, l := range layouts {
		if t, err := gotime.Parse(l, norm); err == nil {
			return t.UTC(), nil
		}
	}
	return gotime.Time{}, UserErr("Invalid date: "+s, "Use ISO 8601 format: 2024-01-01, 2024-01-01T12:00:00Z")
}

// CheckpointType normalises a type filter: "training"/"weights" and
// "sampler"/"sampler_weights".
func CheckpointType(t string) (string, error) {
	switch t {
	case "training", "weights":
		return "training", nil
	case "sampler", "sampler_weights":
		return "sampler", nil
	}
	return "", UserErr("Invalid checkpoint type: "+t, "Valid types: weights, sampler_weights")
}
