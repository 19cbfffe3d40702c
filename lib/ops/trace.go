package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	gotime "time"

	"github.com/tinkershell/tinker/lib/download"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Trace export, shared by session.export_trace and
// `tinker session export-trace`.

// TraceURL polls the trace export until it is ready. pending is called
// once if the first poll is not ready.
func TraceURL(ctx context.Context, c *tinkerapi.Client, id string, pending func()) (string, error) {
	for i := 0; ; i++ {
		t, err := c.TraceExport(ctx, id)
		if err != nil {
			return "", err
		}
		switch t.Status {
		case "ready":
			return t.URL, nil
		case "failed":
			return "", fmt.Errorf("Trace export failed for session %s: %s", id, t.Error)
		}
		if i == 0 && pending != nil {
			pending()
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-gotime.After(min(tracePollInterval, tracePollFirst<<min(i, 8))):
		}
	}
}

// SaveTrace downloads a trace URL to dest (parents created), returning
// the bytes written, through lib/download: retried on 5xx and network
// failures, written to a pending sibling and renamed, so a failed download
// leaves no partial file. prog, if set, follows the bytes.
func SaveTrace(ctx context.Context, url, dest string, prog download.Progress) (int64, error) {
	dir := filepath.Dir(dest)
	if dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, UserErr("Failed to save trace: "+err.Error(), "Please check that you have write permissions to "+dir)
		}
	}
	n, err := download.File(ctx, download.Options{
		URL:      func(context.Context) (string, error) { return url, nil },
		Client:   storageClient,
		Progress: prog,
	}, dest)
	var se *download.StatusError
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, context.Canceled):
		return 0, err
	case errors.As(err, &se):
		return 0, UserErr("Failed to download trace: "+se.Error(), traceHint)
	case errors.Is(err, download.ErrDownload):
		return 0, UserErr("Failed to download trace: "+downloadReason(err), traceHint)
	}
	return 0, UserErr("Failed to save trace: "+err.Error(), "Please check that you have write permissions to "+dir)
}

// TraceDestination is the default trace file: <abs cwd>/<id>.pftrace.
func TraceDestination(id, output string) (string, error) {
	if output != "" {
		return output, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Join(wd, id+".pftrace"), nil
}

// TraceResult is an exported trace: its URL, or where it was saved.
type TraceResult struct {
	SessionID, Destination, URL string
	Size                        int64
}

func (t *TraceResult) Record(gotime.Time) *render.Record {
	r := &render.Record{Title: "Trace Export: " + t.SessionID}
	r.Fields = append(r.Fields, render.Field{Name: "Session ID", Value: t.SessionID})
	if t.Destination == "" {
		r.Fields = append(r.Fields, render.Field{Name: "URL", Value: t.URL})
		return r
	}
	r.Fields = append(r.Fields, render.Field{Name: "Saved to", Value: t.Destination})
	if t.Size > 0 {
		r.Fields = append(r.Fields, render.Field{Name: "Size", Value: render.Size(t.Size)})
	}
	return r
}

func (t *TraceResult) RowColumns() []render.Column {
	return []render.Column{{Header: "Session ID", Kind: render.ID}, {Header: "Saved to", Kind: render.Path}, {Header: "Size", Kind: render.Number}}
}

func (t *TraceResult) Row(gotime.Time) []string {
	return []string{t.SessionID, t.Destination, render.Size(t.Size)}
}

func (t *TraceResult) ListTitle(n int) string { return Plural(n, "trace", "traces") }

func (t *TraceResult) JSON() any {
	if t.Destination == "" {
		return render.Object{{Key: "session_id", Value: t.SessionID}, {Key: "url", Value: t.URL}}
	}
	obj := render.Object{{Key: "session_id", Value: t.SessionID}, {Key: "destination", Value: t.Destination}}
	if t.Size > 0 {
		obj = append(obj, render.Member{Key: "file_size_bytes", Value: t.Size})
	}
	return obj
}

// tracePollInterval is how often a pending trace export is polled. The
// first polls come sooner (tracePollFirst, doubling), since most exports
// are ready within a second.
const (
	tracePollInterval = 5 * gotime.Second
	tracePollFirst    = 250 * gotime.Millisecond
)

const traceHint = "The signed URL may have expired (it is valid for about an hour). Re-run the command to get a fresh one."
