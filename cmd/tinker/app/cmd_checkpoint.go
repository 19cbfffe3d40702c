package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// tinker checkpoint list|info|publish|unpublish|set-ttl|delete|download, as
// the official CLI has them. Each is a thin translation into the builtins' Go
// functions. The rules they keep:
// docs/compat.md, "Checkpoint info and mutations", "Downloads".

// checkpointPath is the argument of the commands acting on one checkpoint.
var checkpointPath = []argSpec{{Name: "CHECKPOINT_PATH"}}

var checkpointCmd = &command{
	Name:    "checkpoint",
	Summary: "Manage checkpoints.",
	Help:    "Manage checkpoints.",
	Sub: []*command{
		{
			Name:    "list",
			Summary: "List checkpoints.",
			Flags: []flagSpec{
				{Long: "--run-id", Kind: flagString, Metavar: "TEXT", Help: "Training run ID (lists that run's checkpoints)."},
				{Long: "--limit", Kind: flagInt, Metavar: "INTEGER", Help: "Maximum number of checkpoints to fetch without --run-id (default: 20, 0 for all)."},
			},
			API: checkpointList,
		},
		{
			Name:    "info",
			Summary: "Show details of a checkpoint.",
			Args:    checkpointPath,
			API:     checkpointInfo,
		},
		{
			Name:    "publish",
			Summary: "Publish a checkpoint (make it public).",
			Args:    checkpointPath,
			API:     checkpointPublish,
		},
		{
			Name:    "unpublish",
			Summary: "Unpublish a checkpoint (make it private).",
			Args:    checkpointPath,
			API:     checkpointUnpublish,
		},
		{
			Name:    "set-ttl",
			Summary: "Set or remove a checkpoint's expiration.",
			Args:    checkpointPath,
			Flags: []flagSpec{
				{Long: "--ttl", Kind: flagInt, Metavar: "INTEGER", Help: "Expire the checkpoint after this many seconds."},
				{Long: "--remove", Kind: flagBool, Help: "Remove the expiration."},
			},
			API: checkpointSetTTL,
		},
		{
			Name:    "delete",
			Summary: "Delete checkpoints.",
			Help: "Delete checkpoints given by path, or a run's checkpoints (--run-id)\n" +
				"filtered by --type, --before and --after. Asks first unless -y is given.",
			Args: []argSpec{{Name: "CHECKPOINT_PATHS", Optional: true, Variadic: true}},
			Flags: []flagSpec{
				{Long: "--run-id", Kind: flagString, Metavar: "TEXT", Help: "Delete checkpoints of this training run (with optional filters)."},
				{Long: "--type", Kind: flagString, Metavar: "TEXT", Help: "Only this type: weights or sampler_weights."},
				{Long: "--before", Kind: flagString, Metavar: "TEXT", Help: "Only checkpoints created before this date (ISO 8601)."},
				{Long: "--after", Kind: flagString, Metavar: "TEXT", Help: "Only checkpoints created after this date (ISO 8601)."},
				{Long: "--yes", Short: "-y", Kind: flagBool, Help: "Skip the confirmation prompt."},
			},
			API: checkpointDelete,
		},
		{
			Name:    "download",
			Summary: "Download and extract a checkpoint archive.",
			Args:    checkpointPath,
			Flags: []flagSpec{
				{Long: "--output", Short: "-o", Kind: flagPath, Metavar: "PATH", Help: "Parent directory for the checkpoint (default: current directory)."},
				{Long: "--force", Kind: flagBool, Help: "Replace an existing copy (only once the new one is complete)."},
			},
			API: checkpointDownload,
		},
		{
			Name:    "push-hf",
			Summary: "Upload a checkpoint to the Hugging Face Hub.",
			Args:    checkpointPath,
			Flags: []flagSpec{
				{Long: "--repo", Short: "-r", Kind: flagString, Metavar: "TEXT", Help: "Hub repo id."},
				{Long: "--public", Kind: flagBool, Help: "Create a public repo."},
				{Long: "--revision", Kind: flagString, Metavar: "TEXT", Help: "Branch to upload to."},
				{Long: "--commit-message", Kind: flagString, Metavar: "TEXT", Help: "Commit message."},
				{Long: "--create-pr", Kind: flagBool, Help: "Open a pull request."},
				{Long: "--allow-pattern", Kind: flagMulti, Metavar: "TEXT", Help: "Upload only matching files (repeatable)."},
				{Long: "--ignore-pattern", Kind: flagMulti, Metavar: "TEXT", Help: "Skip matching files (repeatable)."},
				{Long: "--no-model-card", Kind: flagBool, Help: "Do not write a README.md model card."},
			},
			API: checkpointPushHF,
		},
		checkpointSaveCmd,
		checkpointExportCmd,
	},
}

func checkpointList(r *apiRun) error {
	runID := r.str("run-id")
	limit := r.intOr("limit", 20)
	// A listing stays live until it is printed, so a collection while it
	// grows frees next to nothing: 10,000 checkpoints (~5 MB of pages and
	// entries) crossed the collector's first goal (4 MB) once, an eighth
	// of the command's CPU. Twice the default leaves it room; the
	// subcommand is the process's last work, so it is not set back.
	debug.SetGCPercent(200)
	// One P, likewise not set back: the listing waits on the server and
	// decodes a page in about a third of a millisecond, so a second P only
	// woke and parked threads (futex, nanosleep, clone) as pages came in:
	// 5-9% of the command's CPU in paired runs under load, wall time no
	// worse (the server is another process; pages are still fetched four
	// at a time). Setting it back at the end cost that gain again. In
	// about half the runs the dropped P holds the inits' span cache, and
	// releasing it takes ~105 page faults (docs/protocol.md, "Page faults
	// and scans in the listing"); calling it first thing in Main did not
	// change that.
	runtime.GOMAXPROCS(1)
	c, err := r.preflight()
	if err != nil {
		return err
	}
	// JSON prints the whole listing or nothing, so it is held until
	// printed: packed, ~40 bytes an entry rather than ~210.
	if r.jsonMode() {
		cps, err := ops.ListCheckpointsPacked(r.ctx, c, runID, limit)
		if err != nil {
			return err
		}
		return ops.WriteCheckpointListJSON(r.io.Out, runID, cps)
	}
	progress := func(target int) ops.Progress {
		label := fmt.Sprintf("Fetching %d checkpoints", target)
		if limit == 0 {
			label = "Fetching all checkpoints"
		}
		return r.bar(label, int64(target))
	}
	cps, total, err := ops.ListCheckpoints(r.ctx, c, runID, limit, progress)
	if err != nil {
		return err
	}
	t := &render.Table{Title: ops.Plural(len(cps), "checkpoint", "checkpoints")}
	if runID != "" {
		t.Title += " for run " + runID
	} else {
		t.Title += moreSuffix(total, len(cps))
	}
	t.Columns = (&ops.Checkpoint{}).RowColumns()
	now := r.now()
	for i := range cps {
		t.Rows = append(t.Rows, (&ops.Checkpoint{C: cps[i]}).Row(now))
	}
	return r.writeTable(t)
}

func checkpointInfo(r *apiRun) error {
	path := r.args[0]
	if err := tinkerapi.CheckScheme(path, "weights"); err != nil {
		return err
	}
	c, err := r.preflight()
	if err != nil {
		return err
	}
	cp, err := ops.FindCheckpoint(r.ctx, c, path)
	if err != nil {
		return err
	}
	return r.show(cp)
}

func checkpointPublish(r *apiRun) error   { return setPublished(r, true) }
func checkpointUnpublish(r *apiRun) error { return setPublished(r, false) }

func setPublished(r *apiRun, on bool) error {
	path := r.args[0]
	if err := tinkerapi.CheckScheme(path, "weights"); err != nil {
		return err
	}
	c, err := r.preflight()
	if err != nil {
		return err
	}
	if _, err := tinkerapi.ParsePath(path); err != nil {
		return unexpected(err)
	}
	return ops.Publish(r.ctx, c, path, on)
}

func checkpointSetTTL(r *apiRun) error {
	path := r.args[0]
	if err := tinkerapi.CheckScheme(path, "weights"); err != nil {
		return err
	}
	const hint = "Use --ttl to set an expiration or --remove to clear it"
	hasTTL, remove := r.has("ttl"), r.has("remove")
	switch {
	case !hasTTL && !remove:
		return &tinkerapi.UserError{Msg: "Must specify either --ttl <seconds> or --remove", Details: hint}
	case hasTTL && remove:
		return &tinkerapi.UserError{Msg: "Cannot specify both --ttl and --remove", Details: hint}
	}
	c, err := r.preflight()
	if err != nil {
		return err
	}
	if _, err := tinkerapi.ParsePath(path); err != nil {
		return unexpected(err)
	}
	var ttl *int64
	if hasTTL {
		n := int64(r.intOr("ttl", 0)) // sent unchanged, even 0 or negative
		ttl = &n
	}
	return ops.SetTTL(r.ctx, c, path, ttl)
}

func checkpointDelete(r *apiRun) error {
	paths := r.args
	runID := r.str("run-id")
	typ := r.str("type")
	switch {
	case len(paths) == 0 && runID == "":
		return &tinkerapi.UserError{Msg: "Must specify checkpoint paths or --run-id", Details: "Examples:\n" +
			"  tinker checkpoint delete tinker://run-id/weights/0001\n" +
			"  tinker checkpoint delete --run-id <run-id>\n" +
			"  tinker checkpoint delete --run-id <run-id> --type weights --before 2024-06-01"}
	case len(paths) > 0 && runID != "":
		return &tinkerapi.UserError{Msg: "Cannot specify both checkpoint paths and --run-id", Details: "Use either explicit paths or --run-id with optional filters"}
	case runID == "" && (typ != "" || r.str("before") != "" || r.str("after") != ""):
		return &tinkerapi.UserError{Msg: "--type, --before, and --after require --run-id", Details: "Example: tinker checkpoint delete --run-id <run-id> --type weights --before 2024-06-01"}
	}
	c, err := r.preflight()
	if err != nil {
		return err
	}
	var before, after *time.Time
	for _, d := range []struct {
		s   string
		dst **time.Time
	}{{r.str("before"), &before}, {r.str("after"), &after}} {
		if d.s == "" {
			continue
		}
		t, err := ops.ParseDate(d.s)
		if err != nil {
			return err
		}
		*d.dst = &t
	}
	if runID == "" {
		for _, p := range paths {
			if err := tinkerapi.CheckScheme(p, "weights"); err != nil {
				return err
			}
		}
	}
	plan, err := ops.PlanDelete(r.ctx, c, paths, ops.DeleteFilter{RunID: runID, Type: typ, Before: before, After: after}, r.now())
	if err != nil {
		return err
	}
	paths = plan.Paths
	if runID != "" && len(paths) == 0 {
		// Plain text even in JSON mode (a kept quirk).
		fmt.Fprintf(r.io.Out, "No checkpoints found for run %s matching filters\n", runID)
		return nil
	}
	if !r.has("yes") {
		fmt.Fprint(r.io.Out, plan.Warning())
		ok, err := confirm(r.ctx, r.io.In, r.io.Out, plan.Question())
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(r.io.Out, "Deletion cancelled.")
			return nil
		}
	}
	bar := r.bar("Deleting checkpoints", int64(len(paths)))
	deleted, failed, skipped := ops.DeleteCheckpoints(r.ctx, c, paths, bar)
	bar.Finish()
	if err := r.reportDeletions(deleted, failed, skipped); err != nil {
		return err
	}
	if r.ctx.Err() != nil {
		return errAborted
	}
	// Failed deletions still exit 0 (a kept quirk).
	return nil
}

// reportDeletions prints the outcome of checkpoint delete.
func (r *apiRun) reportDeletions(deleted []string, failed []ops.DeleteFailure, skipped []string) error {
	if r.jsonMode() {
		res := &ops.DeleteResult{Deleted: deleted, Failed: failed, Skipped: skipped}
		return render.WriteJSON(r.io.Out, res.JSON(), render.JSONOptions{Compact: true})
	}
	fmt.Fprintf(r.io.Out, "Deleted %d checkpoint(s)\n", len(deleted))
	if len(failed) > 0 {
		fmt.Fprintf(r.io.Out, "Failed to delete %d checkpoint(s):\n", len(failed))
		for _, f := range failed {
			fmt.Fprintf(r.io.Out, "  - %s: %s\n", f.Path, f.Error)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(r.io.Out, "Not attempted (interrupted): %d checkpoint(s):\n", len(skipped))
		for _, p := range skipped {
			fmt.Fprintf(r.io.Out, "  - %s\n", p)
		}
	}
	return nil
}

// errPromptAbort is EOF at the confirmation prompt, which the official CLI
// reports as an empty unexpected error (kept, exit 1). Ctrl-C there prints
// "Aborted!" instead.
var errPromptAbort = &tinkerapi.UserError{Msg: "Unexpected error occurred: "}

// confirm asks like click.confirm: "<q> [y/N]: " on out, default no,
// "Error: invalid input" and ask again on anything else. Ctrl-C (ctx)
// abandons the read, which would otherwise block until Enter.
func confirm(ctx context.Context, in io.Reader, out io.Writer, question string) (bool, error) {
	br, ok := in.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(in)
	}
	type answer struct {
		line string
		err  error
	}
	for {
		fmt.Fprintf(out, "%s [y/N]: ", question)
		ch := make(chan answer, 1)
		go func() {
			line, err := br.ReadString('\n')
			ch <- answer{line, err}
		}()
		var line string
		var err error
		select {
		case <-ctx.Done():
			return false, errAborted
		case a := <-ch:
			line, err = a.line, a.err
		}
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			return false, errPromptAbort
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return true, nil
		case "n", "no", "":
			return false, nil
		}
		fmt.Fprintln(out, "Error: invalid input")
		if err != nil { // EOF after an invalid last line
			return false, errPromptAbort
		}
	}
}

func checkpointDownload(r *apiRun) error {
	path := r.args[0]
	output, force := r.str("output"), r.has("force")
	// The local checks come before the service is contacted, as in the
	// official CLI.
	if _, err := ops.CheckDownload(path, output, force); err != nil {
		var ue *tinkerapi.UserError
		if errors.As(err, &ue) {
			return err
		}
		return unexpected(err)
	}
	c, err := r.preflight()
	if err != nil {
		return err
	}
	if _, err := tinkerapi.ParsePath(path); err != nil {
		return unexpected(err)
	}
	bar := &lazyBar{start: func() *clickProgress { return r.bar("Downloading archive", 0) }}
	var stage *progress.Staged
	res, err := ops.DownloadCheckpoint(r.ctx, c, path, ops.DownloadOptions{
		Output: output,
		Force:  force,
		Start: func(p tinkerapi.Path) download.Progress {
			fmt.Fprintf(r.io.Err, "Creating checkpoint archive for run id: %s checkpoint id: %s (this may take a while)\n", p.RunID, p.CheckpointID)
			if !r.io.ErrTTY || r.jsonMode() {
				return bar // the official CLI's click bars (docs/compat.md)
			}
			// On a terminal, the bar download() shows at the prompt.
			stage = ops.DownloadStage(r.io.Err, r.io.Width)
			return stage
		},
	})
	ops.EndStage(stage, err)
	bar.p.Finish()
	if err != nil {
		return err
	}
	if stage == nil {
		// Extraction ran while the archive streamed in; the bar keeps the
		// official output's shape.
		eb := r.bar("Extracting archive ", int64(res.Files))
		eb.Add(int64(res.Files))
		eb.Finish()
	}
	return r.show(&ops.DownloadResult{Path: path, Destination: res.Path, Size: res.ContentLength, Files: res.Files, Bytes: res.Bytes})
}

// lazyBar draws its bar only once the archive download starts, so a
// failed archive request prints no progress label (as in the official CLI).
type lazyBar struct {
	start func() *clickProgress
	once  sync.Once
	p     *clickProgress
}

func (l *lazyBar) bar() *clickProgress {
	l.once.Do(func() { l.p = l.start() })
	return l.p
}

func (l *lazyBar) SetTotal(n int64) { l.bar().SetTotal(n) }
func (l *lazyBar) Set(n int64)      { l.bar().Set(n) }
func (l *lazyBar) Add(n int64)      { l.bar().Add(n) }

func checkpointPushHF(r *apiRun) error {
	path := r.args[0]
	if err := tinkerapi.CheckScheme(path, "sampler_weights"); err != nil {
		return err
	}
	c, err := r.preflight()
	if err != nil {
		return err
	}
	o := ops.HubPushOptions{
		Repo: r.str("repo"), Revision: r.str("revision"), CommitMessage: r.str("commit-message"),
		Public: r.has("public"), CreatePR: r.has("create-pr"), NoModelCard: r.has("no-model-card"),
		AllowPatterns: r.multi("allow-pattern"), IgnorePatterns: r.multi("ignore-pattern"),
		Notice: func(p tinkerapi.Path) {
			fmt.Fprintf(r.io.Err, "Creating checkpoint archive for run id: %s checkpoint id: %s (this may take a while)\n", p.RunID, p.CheckpointID)
		},
	}
	var bar *progress.Bar
	if r.io.ErrTTY {
		bar = progress.NewBytes(r.io.Err, true, r.io.Width, "Uploading", 0)
		o.Progress = func(sent, total int64) { bar.SetTotal(total); bar.Set(sent) }
	}
	res, err := ops.PushToHub(r.ctx, c, path, o)
	bar.End(err)
	if err != nil {
		return err
	}
	return r.show(res)
}
