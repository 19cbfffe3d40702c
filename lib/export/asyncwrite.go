package export

import (
	"io"
	"sync/atomic"
)

// asyncWriter hands full buffers to a goroutine that writes them to w, so
// that making the next blocks overlaps the write system calls (the merge
// of one-block tensors, most experts', would otherwise alternate compute
// and I/O). At most n buffers of size bytes are held. The first write
// error stops further writing; Write reports it as soon as it is seen and
// Close always.
type asyncWriter struct {
	cur        []byte
	full, free chan []byte
	done       chan error
	failed     atomic.Pointer[error]
}

func newAsyncWriter(w io.Writer, n, size int) *asyncWriter {
	a := &asyncWriter{cur: make([]byte, 0, size), full: make(chan []byte, n), free: make(chan []byte, n), done: make(chan error, 1)}
	for range n - 1 {
		a.free <- make([]byte, 0, size)
	}
	go func() {
		var err error
		for b := range a.full {
			if err == nil {
				if _, err = w.Write(b); err != nil {
					a.failed.Store(&err)
				}
			}
			a.free <- b[:0]
		}
		a.done <- err
	}()
	return a
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	if e := a.failed.Load(); e != nil {
		return 0, *e
	}
	n := len(p)
	for len(p) > 0 {
		k := copy(a.cur[len(a.cur):cap(a.cur)], p)
		a.cur, p = a.cur[:len(a.cur)+k], p[k:]
		if len(a.cur) == cap(a.cur) {
			a.full <- a.cur
			a.cur = <-a.free
		}
	}
	return n, nil
}

// Close writes what is buffered, waits for the writer and returns its
// first error.
func (a *asyncWriter) Close() error {
	if len(a.cur) > 0 {
		a.full <- a.cur
	}
	close(a.full)
	return <-a.done
}
