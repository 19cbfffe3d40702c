package builtins

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// downloadBuiltins are the builtins download.go defines (registryParts lists them).
var downloadBuiltins = []entry{
	{docEntry{
		Name:      "download",
		Signature: "download(path, output=None, force=False)",
		Summary:   "Download and extract a checkpoint into OUTPUT/<run>_<kind>_<name> (also checkpoint.download).",
		Details: "The archive streams straight into the extractor, into a hidden sibling directory that is\n" +
			"renamed into place only when complete; force=True replaces an existing copy only then.\n" +
			"Links, devices and paths escaping the target are refused; the checkpoint_complete marker is required.",
		Example: "download(run.info(\"RUN_ID\").last_sampler_checkpoint, output=\"exports\")",
	}, downloadFn},
	{docEntry{
		Name:      "checkpoint.download",
		Signature: "checkpoint.download(path, output=None, force=False)",
		Summary:   "Same as download().",
		Example:   `checkpoint.download("tinker://RUN_ID/sampler_weights/final", force=True)`,
	}, downloadFn},
}

// DownloadResult is what download() returns.
type DownloadResult struct{ ops.DownloadResult }

var (
	_ RecordValue       = (*DownloadResult)(nil)
	_ JSONValue         = (*DownloadResult)(nil)
	_ starlark.HasAttrs = (*DownloadResult)(nil)
)

func (d *DownloadResult) String() string        { return fmt.Sprintf("<download %s>", d.Destination) }
func (d *DownloadResult) Type() string          { return "download" }
func (d *DownloadResult) Freeze()               {}
func (d *DownloadResult) Truth() starlark.Bool  { return true }
func (d *DownloadResult) Hash() (uint32, error) { return starlark.String(d.Destination).Hash() }

func (d *DownloadResult) AttrNames() []string                      { return downloadAttrs.names(d) }
func (d *DownloadResult) Attr(name string) (starlark.Value, error) { return downloadAttrs.get(d, name) }

var downloadAttrs = attrTable[*DownloadResult]{
	{name: "bytes", doc: "the bytes extracted", value: func(d *DownloadResult) starlark.Value { return starlark.MakeInt64(d.Bytes) }},
	{name: "checkpoint_path", doc: "the tinker:// path downloaded", value: func(d *DownloadResult) starlark.Value { return starlark.String(d.Path) }},
	{name: "destination", doc: "the directory it was extracted into", value: func(d *DownloadResult) starlark.Value { return starlark.String(d.Destination) }},
	{name: "file_size_bytes", doc: "the archive's size, or None if the server did not say", value: func(d *DownloadResult) starlark.Value {
		if d.Size == 0 {
			return starlark.None
		}
		return starlark.MakeInt64(d.Size)
	}},
	{name: "files", doc: "the number of files extracted", value: func(d *DownloadResult) starlark.Value { return starlark.MakeInt(d.Files) }},
}

func (d *DownloadResult) MarshalJSON() ([]byte, error) { return marshalJSON(d) }

func downloadFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pv starlark.Value
	var outV starlark.Value = starlark.None
	var force bool
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &pv, "output?", &outV, "force?", &force); err != nil {
		return nil, err
	}
	path, err := pathOf(pv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	output, err := optString(outV, "output")
	if err != nil {
		return nil, err
	}
	if _, err := tinkerapi.ParseArg(path); err != nil {
		return nil, err
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	var stage *progress.Staged
	o := ops.DownloadOptions{Output: output, Force: force}
	if env.NoticesTTY {
		o.Start = func(tinkerapi.Path) download.Progress {
			stage = ops.DownloadStage(env.Notices, env.Width)
			return stage
		}
	}
	res, err := ops.DownloadCheckpoint(ContextOf(thread), c, path, o)
	ops.EndStage(stage, err)
	var ue *tinkerapi.UserError
	if errors.As(err, &ue) && strings.HasPrefix(ue.Msg, ops.TargetExists) {
		// The CLI's hint names --force; a call has force=True.
		return nil, userErr(ue.Msg+": pass force=True to replace it, or output=\"DIR\" for another parent directory", "")
	}
	if err != nil {
		return nil, err
	}
	return &DownloadResult{ops.DownloadResult{Path: path, Destination: res.Path, Size: res.ContentLength, Files: res.Files, Bytes: res.Bytes}}, nil
}
