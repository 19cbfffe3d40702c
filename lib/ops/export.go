package ops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	gotime "time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// ExportOptions configure ExportCheckpoint.
type ExportOptions struct {
	Format, Base, DType string
	Experts             string // PEFT layout of expert adapters (export.Options.Experts)
	Force               bool
	// Start, for a tinker:// path, is called when the archive is
	// requested and returns where the download reports progress.
	Start func(p tinkerapi.Path) download.Progress
	// Progress is told the output bytes written and expected.
	Progress func(done, total int64)
}

// ExportCheckpoint exports path (tinker:// or a local adapter directory)
// into out (lib/export). A tinker:// checkpoint is downloaded as
// DownloadCheckpoint does, into a hidden sibling of out removed after; its
// run names the base model. client is called only for a tinker:// path.
func ExportCheckpoint(ctx context.Context, client func() (*tinkerapi.Client, error), path, out string, o ExportOptions) (*ExportResult, error) {
	eo := export.Options{Adapter: path, Format: o.Format, Base: o.Base, Out: out, DType: o.DType, Experts: o.Experts, Force: o.Force, Progress: o.Progress}
	if err := export.CheckOut(out, o.Force); err != nil {
		return nil, err
	}
	if _, err := tinkerapi.ParsePath(path); err == nil {
		c, err := client()
		if err != nil {
			return nil, err
		}
		dir, cleanup, err := fetchAdapter(ctx, c, path, out, o.Start)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		eo.Adapter, eo.Checkpoint = dir, path
		if wi, err := c.WeightsInfo(ctx, path); err == nil {
			eo.BaseModel = wi.BaseModel
		}
	}
	res, err := export.Export(ctx, eo)
	if err != nil {
		return nil, err
	}
	return &ExportResult{Path: path, Result: *res}, nil
}

// fetchAdapter downloads a checkpoint into a hidden scratch directory
// beside out (the same disk), removed by the returned function.
func fetchAdapter(ctx context.Context, c *tinkerapi.Client, path, out string, start func(tinkerapi.Path) download.Progress) (string, func(), error) {
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, fmt.Errorf("create output parent: %w", err)
	}
	prefix := "." + filepath.Base(out) + ".adapter-"
	atomicfile.SweepStale(parent, prefix) // left by a killed export
	td, err := atomicfile.MkdirTemp(parent, prefix)
	if err != nil {
		return "", nil, fmt.Errorf("scratch directory: %w", err)
	}
	cleanup := func() { os.RemoveAll(td.Path); td.Release() }
	res, err := DownloadCheckpoint(ctx, c, path, DownloadOptions{Output: td.Path, Start: start})
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return res.Path, cleanup, nil
}

// ExportResult is an exported checkpoint.
type ExportResult struct {
	Path string // the tinker:// path or adapter directory exported
	export.Result
}

func (e *ExportResult) Record(gotime.Time) *render.Record {
	r := &render.Record{Title: "Checkpoint Export: " + e.Path}
	add := func(k, v string) { r.Fields = append(r.Fields, render.Field{Name: k, Value: v}) }
	add("Checkpoint Path", e.Path)
	add("Format", e.Format)
	add("Base Model", e.BaseModel)
	add("Adapted Matrices", fmt.Sprint(e.Modules))
	add("Size", render.Size(e.Bytes))
	add("Written to", e.Out)
	for _, w := range e.Warnings {
		add("Warning", w)
	}
	return r
}

func (e *ExportResult) RowColumns() []render.Column {
	return []render.Column{{Header: "Checkpoint Path", Kind: render.Path}, {Header: "Format"}, {Header: "Written to", Kind: render.Path}}
}

func (e *ExportResult) Row(gotime.Time) []string { return []string{e.Path, e.Format, e.Out} }

func (e *ExportResult) ListTitle(n int) string { return Plural(n, "export", "exports") }

func (e *ExportResult) JSON() any {
	ws := make([]any, len(e.Warnings))
	for i, w := range e.Warnings {
		ws[i] = w
	}
	return render.Object{{Key: "checkpoint_path", Value: e.Path}, {Key: "format", Value: e.Format},
		{Key: "base_model", Value: e.BaseModel}, {Key: "output", Value: e.Out}, {Key: "modules", Value: e.Modules},
		{Key: "bytes", Value: e.Bytes}, {Key: "untied", Value: e.Untied}, {Key: "warnings", Value: ws}}
}
