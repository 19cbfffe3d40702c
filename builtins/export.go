package builtins

import (
	"fmt"

	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// exportBuiltins are the builtins export.go defines (registryParts lists them).
var exportBuiltins = []entry{
	{docEntry{
		Name:      "export",
		Signature: `export(path, output, format="merged", base=None, dtype="same", experts="", force=False)`,
		Summary:   "Export a checkpoint as a merged Hugging Face model or a PEFT adapter (also tinker checkpoint export).",
		Details: "path is a tinker:// checkpoint (downloaded as download() does) or a local adapter directory.\n" +
			"format=\"merged\" writes W + (alpha/r)·B·A into a copy of the base model, shard by shard in the base's\n" +
			"layout and dtype (dtype=\"bfloat16\" or \"float32\" converts); the base is base=DIR, else the Hugging Face\n" +
			"cache. format=\"peft\" writes an adapter for PEFT under Hugging Face names (warnings say what vLLM loads).\n" +
			"experts=\"per-expert\" or \"fused\" (peft) chooses how expert adapters are written; the default is how\n" +
			"transformers holds the model, and the warnings say which server loads the layout written.\n" +
			"The output appears only when complete; force=True replaces an existing one then.",
		Example: "ck = save_checkpoint(\"tinker-local/tiny-llama\", rank=4)\n" +
			"export(ck.tinker_path, \"exports/merged\", force=True)",
	}, exportFn},
}

// ExportResult is what export() returns.
type ExportResult struct{ ops.ExportResult }

var (
	_ RecordValue       = (*ExportResult)(nil)
	_ JSONValue         = (*ExportResult)(nil)
	_ starlark.HasAttrs = (*ExportResult)(nil)
)

func (e *ExportResult) String() string                           { return fmt.Sprintf("<export %s %s>", e.Format, e.Out) }
func (e *ExportResult) Type() string                             { return "export" }
func (e *ExportResult) Freeze()                                  {}
func (e *ExportResult) Truth() starlark.Bool                     { return true }
func (e *ExportResult) Hash() (uint32, error)                    { return starlark.String(e.Out).Hash() }
func (e *ExportResult) AttrNames() []string                      { return exportAttrs.names(e) }
func (e *ExportResult) Attr(name string) (starlark.Value, error) { return exportAttrs.get(e, name) }

var exportAttrs = attrTable[*ExportResult]{
	{name: "base_model", doc: "the base model the adapter was trained on", value: func(e *ExportResult) starlark.Value { return starlark.String(e.BaseModel) }},
	{name: "bytes", doc: "the bytes written", value: func(e *ExportResult) starlark.Value { return starlark.MakeInt64(e.Bytes) }},
	{name: "checkpoint_path", doc: "the tinker:// path or adapter directory exported", value: func(e *ExportResult) starlark.Value { return starlark.String(e.Path) }},
	{name: "format", doc: `"merged" or "peft"`, value: func(e *ExportResult) starlark.Value { return starlark.String(e.Format) }},
	{name: "modules", doc: "how many matrices the adapter adapts", value: func(e *ExportResult) starlark.Value { return starlark.MakeInt(e.Modules) }},
	{name: "output", doc: "the directory written", value: func(e *ExportResult) starlark.Value { return starlark.String(e.Out) }},
	{name: "untied", doc: "True when a tied base got a separate lm_head", value: func(e *ExportResult) starlark.Value { return starlark.Bool(e.Untied) }},
	{name: "warnings", doc: "what a serving engine may not support, as strings", value: func(e *ExportResult) starlark.Value { return strList(e.Warnings) }},
}

func (e *ExportResult) MarshalJSON() ([]byte, error) { return marshalJSON(e) }

func exportFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pv starlark.Value
	var out string
	var baseV starlark.Value = starlark.None
	format, dtype, experts, force := export.Merged, "same", "", false
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &pv, "output", &out, "format?", &format,
		"base?", &baseV, "dtype?", &dtype, "experts?", &experts, "force?", &force); err != nil {
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
	o := ops.ExportOptions{Format: format, Base: base, DType: dtype, Experts: experts, Force: force}
	var stage *progress.Staged
	var bar *progress.Bar
	if env.NoticesTTY {
		o.Start = func(tinkerapi.Path) download.Progress {
			stage = ops.DownloadStage(env.Notices, env.Width)
			return stage
		}
		o.Progress = func(done, total int64) {
			if bar == nil {
				ops.EndStage(stage, nil)
				bar = progress.NewBytes(env.Notices, true, env.Width, "Writing", total)
			}
			bar.Set(done)
		}
	}
	res, err := ops.ExportCheckpoint(ContextOf(thread), env.Client, path, out, o)
	if bar != nil {
		bar.End(err)
	} else {
		ops.EndStage(stage, err)
	}
	if err != nil {
		return nil, err
	}
	return &ExportResult{*res}, nil
}
