package export

import (
	"io"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// asyncWriter hands buffers to a goroutine that writes them to w, so that
// making the next blocks (and the next tensor's) overlaps the write system
// calls. Row blocks are made straight into buffers lent by take and handed
// back by Write without a copy; small writes are gathered in n buffers of
// size bytes; byte ranges of a file are copied in the kernel when w can
// (rangeWriter). A lent buffer may be handed to Write before its bytes
// are made (ready, set by whenReady): the goroutine waits for them in
// turn, so the caller queues a shard's blocks as fast as it reads them
// while the cores make them (unitpool.go). The first write error stops
// further writing; Write reports it as soon as it is seen and Close always.
type asyncWriter struct {
	w       io.Writer
	cur     []byte
	full    chan wjob
	free    chan []byte // small-write buffers
	blocks  chan []byte // buffers lent by take, nil until first used
	done    chan error
	failed  atomic.Pointer[error]
	mu      sync.Mutex
	lent    map[*byte]lentBuf // buffers out with take or borrow, by first byte
	readBuf []byte            // the goroutine's, for ranges copied in user space
	size    int               // of the small-write buffers
}

// wjob is one write: bytes (lent: not a small-write buffer; back is the
// buffer they return to, nil if the caller's; ready, if set, closes once
// they are made) or a range of the file open as fd (closed when done).
type wjob struct {
	b, back []byte
	lent    bool
	ready   <-chan struct{}
	fd      int
	off, n  int64
}

// lentBuf is a buffer Write takes as it is: one of take's (back is the
// whole of it) or the caller's (borrow, back nil), maybe not made yet.
type lentBuf struct {
	back  []byte
	ready <-chan struct{}
}

// rangeWriter is a writer that can append n bytes of the file open as fd
// from off, in the kernel (outdir's files: copy_file_range).
type rangeWriter interface {
	copyRange(fd int, off, n int64) error
}

// asyncBlocks is how many buffers take lends: one being written, the
// rest being made or queued. A shard's FP8 jobs (unitpool.go) are made
// while the writer waits for the oldest: with three, the cores had two
// jobs (a few ms) to cover each write and the writer's stalls in
// writeback (a few ms each under load), and ran dry.
const asyncBlocks = 6

// asyncQueue is how many jobs the goroutine's queue holds beyond the lent
// blocks and small-write buffers: a requantised weight's block comes with
// its scales (borrowed) and often a copied range.
const asyncQueue = 3 * asyncBlocks

func newAsyncWriter(w io.Writer, n, size int) *asyncWriter {
	a := &asyncWriter{w: w, cur: make([]byte, 0, size), full: make(chan wjob, n+asyncBlocks+asyncQueue), free: make(chan []byte, n),
		blocks: make(chan []byte, asyncBlocks), done: make(chan error, 1), lent: map[*byte]lentBuf{}, size: size}
	for range n - 1 {
		a.free <- make([]byte, 0, size)
	}
	for range asyncBlocks {
		a.blocks <- nil
	}
	go a.run()
	return a
}

func (a *asyncWriter) run() {
	var err error
	for j := range a.full {
		if j.ready != nil {
			<-j.ready // even after an error: the buffer is in use until then
		}
		if err == nil {
			if err = a.do(j); err != nil {
				a.failed.Store(&err)
			}
		}
		switch {
		case j.back != nil:
			a.blocks <- j.back
		case j.lent: // the caller's
		case j.b != nil:
			a.free <- j.b[:0]
		case j.n > 0:
			unix.Close(j.fd)
		}
	}
	a.done <- err
}

func (a *asyncWriter) do(j wjob) error {
	if j.b == nil {
		return a.copyRange(j.fd, j.off, j.n)
	}
	_, err := a.w.Write(j.b)
	return err
}

// copyRange appends a file's bytes: in the kernel if w can, else through
// the goroutine's own buffer.
func (a *asyncWriter) copyRange(fd int, off, n int64) error {
	if rw, ok := a.w.(rangeWriter); ok {
		return rw.copyRange(fd, off, n)
	}
	if a.readBuf == nil {
		a.readBuf = make([]byte, a.size)
	}
	return preadCopy(a.w, fd, off, n, a.readBuf)
}

// preadCopy writes n bytes of the file open as fd from off to w through
// buf.
func preadCopy(w io.Writer, fd int, off, n int64, buf []byte) error {
	for n > 0 {
		k, err := unix.Pread(fd, buf[:min(n, int64(len(buf)))], off)
		if err != nil {
			return err
		}
		if k == 0 {
			return io.ErrUnexpectedEOF
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
		off, n = off+int64(k), n-int64(k)
	}
	return nil
}

// take lends a buffer of size bytes to be filled and passed to Write
// (whole or a prefix), which hands it back without copying it; the caller
// must not touch it after. nil if stop closes first.
func (a *asyncWriter) take(size int, stop <-chan struct{}) []byte {
	var b []byte
	select {
	case b = <-a.blocks:
	case <-stop:
		return nil
	}
	if cap(b) < size || size == 0 {
		b = make([]byte, max(size, 1))
	}
	a.mu.Lock()
	a.lent[unsafe.SliceData(b[:1])] = lentBuf{back: b[:cap(b)]}
	a.mu.Unlock()
	return b[:size]
}

// whenReady marks lent buffer b as made only once ready is closed: Write
// takes it at once, and the goroutine writes it when ready.
func (a *asyncWriter) whenReady(b []byte, ready <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l, ok := a.lent[unsafe.SliceData(b)]; ok {
		l.ready = ready
		a.lent[unsafe.SliceData(b)] = l
	}
}

// borrow makes the next Write of b take it without a copy: written in
// turn, after the blocks queued before it are made. The caller must not
// change b until Close.
func (a *asyncWriter) borrow(b []byte) {
	if len(b) > 0 {
		a.mu.Lock()
		a.lent[unsafe.SliceData(b)] = lentBuf{}
		a.mu.Unlock()
	}
}

// untake returns a lent buffer that will not be written.
func (a *asyncWriter) untake(b []byte) {
	if l, ok := a.claim(b); ok && l.back != nil {
		a.blocks <- l.back
	}
}

// claim is the lent buffer p starts, taken off the lent list.
func (a *asyncWriter) claim(p []byte) (lentBuf, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l, ok := a.lent[unsafe.SliceData(p)]
	delete(a.lent, unsafe.SliceData(p))
	return l, ok
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	if e := a.failed.Load(); e != nil {
		return 0, *e
	}
	if l, ok := a.claim(p); ok {
		a.flush()
		a.full <- wjob{b: p, back: l.back, lent: true, ready: l.ready}
		return len(p), nil
	}
	n := len(p)
	for len(p) > 0 {
		k := copy(a.cur[len(a.cur):cap(a.cur)], p)
		a.cur, p = a.cur[:len(a.cur)+k], p[k:]
		if len(a.cur) == cap(a.cur) {
			a.flush()
		}
	}
	return n, nil
}

// flush queues the gathered small writes.
func (a *asyncWriter) flush() {
	if len(a.cur) > 0 {
		a.full <- wjob{b: a.cur}
		a.cur = <-a.free
	}
}

// ReadFrom copies the rest of r: a section of a file as a range job (in
// the kernel where the file system allows), anything else read straight
// into lent buffers.
func (a *asyncWriter) ReadFrom(r io.Reader) (int64, error) {
	if e := a.failed.Load(); e != nil {
		return 0, *e
	}
	if fd, off, n, ok := fileRange(r); ok {
		a.flush()
		a.full <- wjob{fd: fd, off: off, n: n}
		return n, nil
	}
	var total int64
	for {
		b := a.take(a.size, nil)
		k, err := io.ReadFull(r, b)
		if k > 0 {
			a.Write(b[:k])
		} else {
			a.untake(b)
		}
		total += int64(k)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		if e := a.failed.Load(); e != nil {
			return total, *e
		}
	}
}

// fileRange is the unread part of r if r is a section of a file: a
// duplicate of its descriptor (the caller may close the file before the
// goroutine copies), the offset and the length.
func fileRange(r io.Reader) (fd int, off, n int64, ok bool) {
	sr, isSection := r.(*io.SectionReader)
	if !isSection {
		return 0, 0, 0, false
	}
	ra, base, size := sr.Outer()
	f, isFile := ra.(*os.File)
	pos, err := sr.Seek(0, io.SeekCurrent)
	if !isFile || err != nil || size-pos <= 0 {
		return 0, 0, 0, false
	}
	fd, err = unix.Dup(int(f.Fd()))
	if err != nil {
		return 0, 0, 0, false
	}
	return fd, base + pos, size - pos, true
}

// Close writes what is buffered, waits for the writer and returns its
// first error.
func (a *asyncWriter) Close() error {
	if len(a.cur) > 0 {
		a.full <- wjob{b: a.cur}
	}
	close(a.full)
	return <-a.done
}
