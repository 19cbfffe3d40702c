package builtins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

func init() {
	register(docEntry{
		Name:      "export",
		Signature: `export(path, output, format="merged", base=None, dtype="same", force=False)`,
		Summary:   "Export a checkpoint as a merged Hugging Face model or a PEFT adapter (also tinker checkpoint export).",
		Details: "path is a tinker:// checkpoint (downloaded as download() does) or a local adapter directory.\n" +
			"format=\"merged\" writes W + (alpha/r)·B·A into a copy of the base model, shard by shard in the base's\n" +
			"layout and dtype (dtype=\"bfloat16\" or \"float32\" converts); the base is base=DIR, else the Hugging Face\n" +
			"cache. format=\"peft\" writes an adapter for PEFT, vLLM and SGLang under Hugging Face names.\n" +
			"The output appears only when complete; force=True replaces an existing one then.",
		Example: "ck = save_checkpoint(\"tinker-local/tiny-llama\", rank=4)\n" +
			"export(ck.tinker_path, \"exports/merged\", force=True)",
	}, exportFn)
}

// ExportOptions configure ExportCheckpoint.
type ExportOptions struct {
	Format, Base, DType string
	Force               bool
	// Start, for a tinker:// path, is called when the archive is
	// requested and returns where the download reports progress.
	Start func(p tinkerapi.Path) download.Progress
	// Progress is told the output bytes written and expected.
	Progress func(done, total int64)
}

// ExportCheckpoint exports path (tinker:// or a local adapter directory)
// into out. A tinker:// checkpoint is downloaded next to out first (and
// removed after); its run names the base model.
func ExportCheckpoint(ctx context.Context, c func() (*tinkerapi.Client, error), path, out string, o ExportOptions) (*export.Result, error) {
	eo := export.Options{Adapter: path, Format: o.Format, Base: o.Base, Out: out, DType: o.DType, Force: o.Force, Progress: o.Progress}
	if err := export.CheckOut(out, o.Force); err != nil {
		return nil, err
	}
	if strings.HasPrefix(path, "tinker://") {
		client, err := c()
		if err != nil {
			return nil, err
		}
		dir, cleanup, err := fetchAdapter(ctx, client, path, out, o.Start)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		eo.Adapter, eo.Checkpoint = dir, path
		if wi, err := client.WeightsInfo(ctx, path); err == nil {
			eo.BaseModel = wi.BaseModel
		}
	}
	return export.Export(ctx, eo)
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

// ExportResult is what export() returns.
type ExportResult struct {
	Path string
	export.Result
}

var (
	_ RecordValue       = (*ExportResult)(nil)
	_ JSONValue         = (*ExportResult)(nil)
	_ starlark.HasAttrs = (*ExportResult)(nil)
)

func (e *ExportResult) String() string        { return fmt.Sprintf("<export %s %s>", e.Format, e.Out) }
func (e *ExportResult) Type() string          { return "export" }
func (e *ExportResult) Freeze()               {}
func (e *ExportResult) Truth() starlark.Bool  { return true }
func (e *ExportResult) Hash() (uint32, error) { return starlark.String(e.Out).Hash() }
func (e *ExportResult) AttrNames() []string {
	return []string{"base_model", "bytes", "checkpoint_path", "format", "modules", "output", "untied", "warnings"}
}

func (e *ExportResult) Attr(name string) (starlark.Value, error) {
	switch name {
	case "base_model":
		return starlark.String(e.BaseModel), nil
	case "bytes":
		return starlark.MakeInt64(e.Bytes), nil
	case "checkpoint_path":
		return starlark.String(e.Path), nil
	case "format":
		return starlark.String(e.Format), nil
	case "modules":
		return starlark.MakeInt(e.Modules), nil
	case "output":
		return starlark.String(e.Out), nil
	case "untied":
		return starlark.Bool(e.Untied), nil
	case "warnings":
		ws := make([]starlark.Value, len(e.Warnings))
		for i, w := range e.Warnings {
			ws[i] = starlark.String(w)
		}
		return starlark.NewList(ws), nil
	}
	return nil, nil
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

func (e *ExportResult) JSON() any {
	ws := make([]any, len(e.Warnings))
	for i, w := range e.Warnings {
		ws[i] = w
	}
	return render.Object{{Key: "checkpoint_path", Value: e.Path}, {Key: "format", Value: e.Format},
		{Key: "base_model", Value: e.BaseModel}, {Key: "output", Value: e.Out}, {Key: "modules", Value: e.Modules},
		{Key: "bytes", Value: e.Bytes}, {Key: "untied", Value: e.Untied}, {Key: "warnings", Value: ws}}
}

func (e *ExportResult) MarshalJSON() ([]byte, error) { return marshalJSON(e) }

func exportFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pv starlark.Value
	var out string
	var baseV starlark.Value = starlark.None
	format, dtype, force := export.Merged, "same", false
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &pv, "output", &out, "format?", &format,
		"base?", &baseV, "dtype?", &dtype, "force?", &force); err != nil {
		return nil, err
	}
	path, err := pathOf(pv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	base, err := optString(baseV, "base")
	if err != nil {
		return nil, err
	}
	env := envOf(thread)
	o := ExportOptions{Format: format, Base: base, DType: dtype, Force: force}
	var stage *progress.Staged
	var bar *progress.Bar
	if env.NoticesTTY {
		o.Start = func(tinkerapi.Path) download.Progress { stage = DownloadStage(env.Notices, env.Width); return stage }
		o.Progress = func(done, total int64) {
			if bar == nil {
				EndStage(stage, nil)
				bar = progress.NewBytes(env.Notices, true, env.Width, "Writing", total)
			}
			bar.Set(done)
		}
	}
	res, err := ExportCheckpoint(ContextOf(thread), env.Client, path, out, o)
	if bar != nil {
		bar.End(err)
	} else {
		EndStage(stage, err)
	}
	if err != nil {
		return nil, err
	}
	return &ExportResult{Path: path, Result: *res}, nil
}

func (e *ExportResult) RowColumns() []render.Column {
	return []render.Column{{Header: "Checkpoint Path", Kind: render.Path}, {Header: "Format"}, {Header: "Written to", Kind: render.Path}}
}

func (e *ExportResult) Row(gotime.Time) []string { return []string{e.Path, e.Format, e.Out} }

func (e *ExportResult) ListTitle(n int) string { return Plural(n, "export", "exports") }
