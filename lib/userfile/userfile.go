// Package userfile opens and reads the files a person names (adapter and
// base model files, io.read_text's path) so that a FIFO or a device in
// their place can neither hang the program nor fill its memory: opening
// never waits (O_NONBLOCK, so a FIFO without a writer does not block the
// open), a caller that needs a regular file gets an error naming what is
// there instead, and every read stops at a limit.
package userfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// ErrTooLarge is wrapped by the errors of reads that passed their limit.
var ErrTooLarge = errors.New("file too large")

// SpecialLimit is the most ReadAny reads from a FIFO or a device, whose
// size is not known in advance.
const SpecialLimit = 64 << 20

// open opens path for reading without waiting for a FIFO's writer.
func open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// Open opens path for reading, refusing anything but a regular file (a
// symbolic link is followed).
func Open(path string) (*os.File, error) {
	f, st, err := open(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(path, st.Mode())
	}
	return f, nil
}

// notRegular says what path is instead of a regular file.
func notRegular(path string, m fs.FileMode) error {
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO (named pipe)"
	case m&fs.ModeDevice != 0:
		what = "a device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Errorf("%s is %s, not a regular file: give a file", path, what)
}

// ReadFile reads the regular file at path, refusing one larger than
// limit bytes before reading it.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(context.Background(), f, path, limit)
}

// ReadAny reads path, a regular file of at most limit bytes or a FIFO or
// character device, read up to min(limit, SpecialLimit) bytes. A read that
// waits for a FIFO's writer ends when ctx is cancelled.
func ReadAny(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, st, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := st.Mode()
	if m.IsDir() || m&fs.ModeSocket != 0 {
		return nil, notRegular(path, m)
	}
	if !m.IsRegular() {
		limit = min(limit, SpecialLimit)
	}
	return readLimited(ctx, f, path, limit)
}

// readLimited reads f to its end, failing once more than limit bytes came.
func readLimited(ctx context.Context, f *os.File, path string, limit int64) ([]byte, error) {
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d read at once: %w", path, st.Size(), limit, ErrTooLarge)
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
	defer stop()
	b, err := io.ReadAll(io.LimitReader(ContextReader(ctx, f), limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s holds more than the %d bytes read at once: %w", path, limit, ErrTooLarge)
	}
	return b, nil
}

// ContextReader is r, stopping between reads once ctx is done: a long copy
// from a reader that does not watch the context (a file, a pipe, a device
// such as /dev/zero that never blocks) ends promptly on Ctrl-C.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return &ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
