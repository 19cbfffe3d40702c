package builtins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/archive"
	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

func init() {
	register(docEntry{
		Name:      "download",
		Signature: "download(path, output=None, force=False)",
		Summary:   "Download and extract a checkpoint into OUTPUT/<run>_<kind>_<name> (also checkpoint.download).",
		Details: "The archive streams straight into the extractor, into a hidden sibling directory that is\n" +
			"renamed into place only when complete; force=True replaces an existing copy only then.\n" +
			"Links, devices and paths escaping the target are refused; the checkpoint_complete marker is required.",
		Example: "download(run.info(\"RUN_ID\").last_sampler_checkpoint, output=\"exports\")",
	}, downloadFn)
	register(docEntry{
		Name:      "checkpoint.download",
		Signature: "checkpoint.download(path, output=None, force=False)",
		Summary:   "Same as download().",
		Example:   `checkpoint.download("tinker://RUN_ID/sampler_weights/final", force=True)`,
	}, downloadFn)
}

// storageClient fetches signed URLs; it carries no Tinker credentials.
var storageClient = &http.Client{Timeout: 0}

// DownloadOptions configure DownloadCheckpoint.
type DownloadOptions struct {
	Output string // parent directory; empty: current directory
	Force  bool
	// Start, if set, is called when the archive is requested, after the
	// local checks, and returns where the transfer reports progress.
	Start func(p tinkerapi.Path) download.Progress
}

// DownloadStage is the download progress on a terminal, the same for
// download() and tinker checkpoint download: "Preparing archive…" with its
// elapsed time while the service builds the archive (a big checkpoint
// takes a while), then a byte bar with human sizes and rate once bytes flow.
func DownloadStage(w io.Writer, width int) *progress.Staged {
	return progress.NewStaged(progress.NewStatus(w, true, width, "Preparing archive…"), func() progress.Counter {
		return progress.NewBytes(w, true, width, "Downloading", 0)
	})
}

// EndStage ends a DownloadStage: its bar, if bytes flowed, shows the
// outcome; a status line that never became a bar is cleared.
func EndStage(stage *progress.Staged, err error) {
	if stage == nil {
		return
	}
	if bar, ok := stage.Bar().(*progress.Bar); ok {
		bar.End(err)
	}
}

// DownloadCheckpoint downloads path into Output/<target name>.
func DownloadCheckpoint(ctx context.Context, c *tinkerapi.Client, path string, o DownloadOptions) (*download.Result, error) {
	if err := tinkerapi.CheckScheme(path, "weights"); err != nil {
		return nil, err
	}
	name := download.TargetName(path)
	if o.Output != "" {
		if err := os.MkdirAll(o.Output, 0o755); err != nil {
			return nil, fmt.Errorf("create output directory: %w", err)
		}
	}
	target, err := download.TargetPath(o.Output, name)
	if err != nil {
		return nil, err
	}
	if !o.Force {
		if _, err := os.Lstat(target); err == nil {
			return nil, userErr(targetExists+target, "Use --force to overwrite or choose a different output directory.")
		}
	}
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		return nil, userErr(err.Error(), "")
	}
	var prog download.Progress
	if o.Start != nil {
		prog = o.Start(p)
	}
	res, err := download.Download(ctx, download.Options{
		URL:      archiveURL(c, p),
		Client:   storageClient,
		Parent:   o.Output,
		Name:     name,
		Force:    o.Force,
		Adapter:  p.Kind == "sampler_weights",
		Progress: prog,
	})
	if err != nil {
		return nil, downloadErr(err, target)
	}
	return res, nil
}

// targetExists starts the message for a download whose target is there.
const targetExists = "Target directory already exists: "

// downloadErr maps download failures to the official CLI's messages.
func downloadErr(err error, target string) error {
	var ae *tinkerapi.APIError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &ae):
		return tinkerapi.Worded(ae)
	case errors.Is(err, download.ErrTargetExists):
		return userErr(targetExists+target, "Use --force to overwrite or choose a different output directory.")
	case errors.Is(err, download.ErrExtract), errors.Is(err, download.ErrIncomplete):
		return userErr("Failed to extract archive: "+extractReason(err), "The downloaded file may be corrupted. Try downloading again.")
	case errors.Is(err, download.ErrDownload):
		return userErr("Failed to download checkpoint: "+downloadReason(err), "Please check your network connection and try again.")
	}
	var te *tinkerapi.TransportError
	if errors.As(err, &te) {
		return tinkerapi.Worded(te)
	}
	return err
}

// extractReason is the official CLI's text for the two unsafe-member
// failures it knows, and our own text otherwise.
func extractReason(err error) string {
	switch {
	case errors.Is(err, archive.ErrUnsafePath):
		return "Unsafe path in tar archive"
	case errors.Is(err, archive.ErrLink):
		return "Unsafe symlink or hardlink in tar archive"
	}
	s := err.Error()
	for _, prefix := range []string{"extract archive: ", "download: "} {
		if len(s) > len(prefix) && s[:len(prefix)] == prefix {
			s = s[len(prefix):]
		}
	}
	return s
}

func downloadReason(err error) string {
	var se *download.StatusError
	if errors.As(err, &se) {
		return se.Error()
	}
	return err.Error()
}

// DownloadResult is what download() returns.
type DownloadResult struct {
	Path        string
	Destination string
	Size        int64 // Content-Length of the archive, 0 if unknown
	Files       int
	Bytes       int64
}

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
func (d *DownloadResult) AttrNames() []string {
	return []string{"bytes", "checkpoint_path", "destination", "file_size_bytes", "files"}
}

func (d *DownloadResult) Attr(name string) (starlark.Value, error) {
	switch name {
	case "checkpoint_path":
		return starlark.String(d.Path), nil
	case "destination":
		return starlark.String(d.Destination), nil
	case "file_size_bytes":
		if d.Size == 0 {
			return starlark.None, nil
		}
		return starlark.MakeInt64(d.Size), nil
	case "files":
		return starlark.MakeInt(d.Files), nil
	case "bytes":
		return starlark.MakeInt64(d.Bytes), nil
	}
	return nil, nil
}

func (d *DownloadResult) Record(now gotime.Time) *render.Record {
	r := &render.Record{Title: "Checkpoint Download: " + d.Path}
	r.Fields = append(r.Fields, render.Field{Name: "Checkpoint Path", Value: d.Path})
	if d.Size > 0 {
		r.Fields = append(r.Fields, render.Field{Name: "Archive Size", Value: render.Size(d.Size)})
	}
	r.Fields = append(r.Fields, render.Field{Name: "Extracted to", Value: d.Destination})
	return r
}

func (d *DownloadResult) RowColumns() []render.Column {
	return []render.Column{{Header: "Checkpoint Path", Kind: render.Path}, {Header: "Archive Size", Kind: render.Number}, {Header: "Extracted to", Kind: render.Path}}
}

func (d *DownloadResult) Row(now gotime.Time) []string {
	size := "N/A"
	if d.Size > 0 {
		size = render.Size(d.Size)
	}
	return []string{d.Path, size, d.Destination}
}

func (d *DownloadResult) ListTitle(n int) string { return Plural(n, "download", "downloads") }

func (d *DownloadResult) JSON() any {
	obj := render.Object{{Key: "checkpoint_path", Value: d.Path}, {Key: "destination", Value: d.Destination}}
	if d.Size > 0 {
		obj = append(obj, render.Member{Key: "file_size_bytes", Value: d.Size})
	}
	return obj
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
	o := DownloadOptions{Output: output, Force: force}
	if env.NoticesTTY {
		o.Start = func(tinkerapi.Path) download.Progress {
			stage = DownloadStage(env.Notices, env.Width)
			return stage
		}
	}
	res, err := DownloadCheckpoint(ContextOf(thread), c, path, o)
	EndStage(stage, err)
	var ue *tinkerapi.UserError
	if errors.As(err, &ue) && strings.HasPrefix(ue.Msg, targetExists) {
		// The CLI's hint names --force; a call has force=True.
		return nil, userErr(ue.Msg+": pass force=True to replace it, or output=\"DIR\" for another parent directory", "")
	}
	if err != nil {
		return nil, err
	}
	return &DownloadResult{Path: path, Destination: res.Path, Size: res.ContentLength, Files: res.Files, Bytes: res.Bytes}, nil
}

// archiveURL asks the service for a checkpoint's signed archive URL; the
// downloader calls it for every attempt that starts from scratch, so an
// expired URL is replaced.
func archiveURL(c *tinkerapi.Client, p tinkerapi.Path) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		u, err := c.ArchiveURL(ctx, p.RunID, p.CheckpointID)
		if err != nil {
			return "", err
		}
		return u.URL, nil
	}
}
