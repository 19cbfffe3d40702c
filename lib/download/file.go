package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tinkershell/tinker/lib/atomicfile"
)

// File fetches one file (a session trace) from a signed URL to dest, with
// the retries, resumes and stall guards of Download. It writes through a
// pending sibling (atomicfile), so a failure or cancellation leaves dest
// as it was. dest's directory must exist. It returns the bytes written.
// Only opts.URL, Client, Progress and the retry settings apply.
func File(ctx context.Context, opts Options, dest string) (int64, error) {
	if opts.URL == nil {
		return 0, errors.New("download: no file URL source")
	}
	if err := opts.setDefaults(); err != nil {
		return 0, err
	}
	d := &downloader{opts: opts, parent: filepath.Dir(dest)}
	var n int64
	err := d.retry(ctx, func(ctx context.Context) error {
		var err error
		n, err = d.fileAttempt(ctx, dest)
		return err
	})
	return n, err
}

// fileAttempt downloads once into a pending file and commits it.
func (d *downloader) fileAttempt(ctx context.Context, dest string) (int64, error) {
	signed, err := d.opts.URL(ctx)
	if err != nil {
		return 0, fmt.Errorf("get file URL: %w", err)
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	body, err := d.open(actx, cancel, signed)
	if err != nil {
		return 0, err
	}
	defer body.close()
	d.opts.Progress.SetTotal(max(body.total, 0))
	d.opts.Progress.Set(0)
	err = atomicfile.Write(dest, 0, func(w io.Writer) error {
		if _, err := io.Copy(w, body); err != nil {
			return err
		}
		if body.total >= 0 && body.off != body.total {
			return fmt.Errorf("%w: got %d of the %d bytes announced", io.ErrUnexpectedEOF, body.off, body.total)
		}
		return nil
	})
	switch {
	case err == nil:
		return body.off, nil
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case body.netErr != nil:
		return 0, &retryable{body.netErr}
	}
	if cause := context.Cause(actx); stalled(cause) {
		return 0, &retryable{cause}
	}
	return 0, err
}
