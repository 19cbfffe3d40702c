package builtins

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	gotime "time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/download"
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
// the bytes written. It writes to a temporary sibling and renames, so a
// failed download leaves no partial file. prog, if set, follows the bytes.
func SaveTrace(ctx context.Context, url, dest string, prog download.Progress) (int64, error) {
	if dir := filepath.Dir(dest); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, userErr("Failed to save trace: "+err.Error(), "Please check that you have write permissions to "+dir)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := storageClient.Do(req)
	if err != nil {
		return 0, userErr("Failed to download trace: "+err.Error(), traceHint)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, userErr(fmt.Sprintf("Failed to download trace: HTTP Error %d: %s", resp.StatusCode, http.StatusText(resp.StatusCode)), traceHint)
	}
	tmp, err := atomicfile.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".partial-*")
	if err != nil {
		return 0, userErr("Failed to save trace: "+err.Error(), "Please check that you have write permissions to "+filepath.Dir(dest))
	}
	var body io.Reader = resp.Body
	if prog != nil {
		prog.SetTotal(max(resp.ContentLength, 0))
		body = &progressReader{r: resp.Body, p: prog}
	}
	n, err := io.Copy(tmp, body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dest)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, userErr("Failed to download trace: "+err.Error(), traceHint)
	}
	return n, nil
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
