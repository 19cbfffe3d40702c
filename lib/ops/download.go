package ops

import (
	"context"
	"errors"
	"io"
	"net/http"
	gotime "time"

	"github.com/tinkershell/tinker/lib/archive"
	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/progress"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

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

// CheckDownload is the check a checkpoint download makes before anything
// is asked of the service: the path's scheme, then download.Prepare's
// (output created, an existing target refused unless force). It returns
// the target directory. A failure of the file system itself is returned
// as it is; the rest are *tinkerapi.UserError in the official CLI's words.
func CheckDownload(path, output string, force bool) (target string, err error) {
	if err := tinkerapi.CheckScheme(path, "weights"); err != nil {
		return "", err
	}
	target, err = download.Prepare(output, download.TargetName(path), force)
	if errors.Is(err, download.ErrTargetExists) {
		return "", targetExists(target)
	}
	return target, err
}

// TargetExists starts the message for a download whose target is there;
// the builtin words the way out for a call (force=True).
const TargetExists = "Target directory already exists: "

func targetExists(target string) error {
	return UserErr(TargetExists+target, "Use --force to overwrite or choose a different output directory.")
}

// DownloadCheckpoint downloads path into Output/<target name>.
func DownloadCheckpoint(ctx context.Context, c *tinkerapi.Client, path string, o DownloadOptions) (*download.Result, error) {
	target, err := CheckDownload(path, o.Output, o.Force)
	if err != nil {
		return nil, err
	}
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		return nil, UserErr(err.Error(), "")
	}
	var prog download.Progress
	if o.Start != nil {
		prog = o.Start(p)
	}
	res, err := download.Download(ctx, download.Options{
		URL:      archiveURL(c, p),
		Client:   storageClient,
		Parent:   o.Output,
		Name:     download.TargetName(path),
		Force:    o.Force,
		Adapter:  p.Kind == "sampler_weights",
		Progress: prog,
	})
	if err != nil {
		return nil, downloadErr(err, target)
	}
	return res, nil
}

// downloadErr maps download failures to the official CLI's messages.
func downloadErr(err error, target string) error {
	var ae *tinkerapi.APIError
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &ae):
		return tinkerapi.Worded(ae)
	case errors.Is(err, download.ErrTargetExists):
		return targetExists(target)
	case errors.Is(err, download.ErrExtract), errors.Is(err, download.ErrIncomplete):
		return UserErr("Failed to extract archive: "+extractReason(err), "The downloaded file may be corrupted. Try downloading again.")
	case errors.Is(err, download.ErrDownload):
		return UserErr("Failed to download checkpoint: "+downloadReason(err), "Please check your network connection and try again.")
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

// DownloadResult is a downloaded checkpoint.
type DownloadResult struct {
	Path        string
	Destination string
	Size        int64 // Content-Length of the archive, 0 if unknown
	Files       int
	Bytes       int64
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
