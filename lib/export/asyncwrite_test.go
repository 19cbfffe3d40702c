package export

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// Writes of every size come out in order, whole.
func TestAsyncWriterKeepsOrder(t *testing.T) {
	var got, want bytes.Buffer
	a := newAsyncWriter(&got, 3, 100)
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		p := make([]byte, r.IntN(350))
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		want.Write(p)
		if n, err := a.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("wrote %d bytes, want %d (or different bytes)", got.Len(), want.Len())
	}
}

type failAfter struct{ n int }

var errDisk = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n < len(p) {
		return 0, errDisk
	}
	f.n -= len(p)
	return len(p), nil
}

// The underlying writer's first error reaches a later Write and Close.
func TestAsyncWriterReportsError(t *testing.T) {
	a := newAsyncWriter(&failAfter{n: 250}, 2, 100)
	var werr error
	for range 100 {
		if _, werr = a.Write(make([]byte, 64)); werr != nil {
			break
		}
	}
	if !errors.Is(werr, errDisk) {
		t.Errorf("Write after the failure: %v", werr)
	}
	if err := a.Close(); !errors.Is(err, errDisk) {
		t.Errorf("Close: %v", err)
	}
}

// Lent blocks, small writes, file sections and other readers come out in
// order, whole: through a plain writer (sections read in user space) and
// through an output file (sections copied in the kernel), which counts
// every byte.
func TestAsyncWriterLentAndRanges(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	r := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var plain bytes.Buffer
	want := writeMixed(t, newAsyncWriter(&plain, 2, 1000), in, r)
	if !bytes.Equal(plain.Bytes(), want) {
		t.Fatalf("plain writer: %d bytes, want %d (or different bytes)", plain.Len(), len(want))
	}
	f, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := &outDir{}
	want = writeMixed(t, newAsyncWriter(&countWriter{f: f, o: o}, 2, 1000), in, r)
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || o.written != int64(len(want)) {
		t.Fatalf("file: %d bytes (counted %d), want %d (or different bytes)", len(got), o.written, len(want))
	}
}

// writeMixed writes a random mix through a and closes it, returning what
// should have been written.
func writeMixed(t *testing.T, a *asyncWriter, in *os.File, r *rand.Rand) []byte {
	t.Helper()
	var want []byte
	for range 60 {
		n := r.IntN(5000)
		switch r.IntN(4) {
		case 0: // a block made in a lent buffer
			b := a.take(n+r.IntN(100), nil)[:n]
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			want = append(want, b...)
			mustWrite(t, a, b)
		case 1:
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			want = append(want, p...)
			mustWrite(t, a, p)
		case 2: // a tensor copied as it is
			off := r.Int64N(1 << 20)
			n := r.Int64N(2 << 20)
			b := make([]byte, n)
			in.ReadAt(b, off)
			want = append(want, b...)
			if k, err := io.Copy(a, io.NewSectionReader(in, off, n)); k != n || err != nil {
				t.Fatalf("copy section: %d, %v", k, err)
			}
		default:
			p := bytes.Repeat([]byte{byte(n)}, n)
			want = append(want, p...)
			if k, err := io.Copy(a, bytes.NewReader(p)); k != int64(n) || err != nil {
				t.Fatalf("copy reader: %d, %v", k, err)
			}
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	return want
}

func mustWrite(t *testing.T, a *asyncWriter, p []byte) {
	t.Helper()
	if n, err := a.Write(p); n != len(p) || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
}

// A section of a file that ends early is an error, not a short file.
func TestAsyncWriterShortSection(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	f, err := os.Create(src + ".out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []io.Writer{&bytes.Buffer{}, &countWriter{f: f, o: &outDir{}}} {
		a := newAsyncWriter(w, 2, 64)
		io.Copy(a, io.NewSectionReader(in, 50, 200))
		if err := a.Close(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%T: Close = %v, want unexpected EOF", w, err)
		}
	}
}

// A lent buffer handed to Write before its bytes are made (whenReady) is
// written only once they are, and so is everything queued after it: a
// borrowed buffer (the requantised scales) filled meanwhile, and a
// small write. Without the wait the goroutine writes the zeros.
func TestAsyncWriterWaitsForReady(t *testing.T) {
	var got bytes.Buffer
	a := newAsyncWriter(&got, 2, 64)
	var want []byte
	for k := range 200 {
		b := a.take(300, nil)
		clear(b)
		ready := make(chan struct{})
		a.whenReady(b, ready)
		mustWrite(t, a, b)
		s := make([]byte, 40)
		a.borrow(s)
		mustWrite(t, a, s)
		mustWrite(t, a, []byte{byte(k)})
		for i := range b {
			b[i] = byte(k + i)
		}
		for i := range s {
			s[i] = byte(k * i)
		}
		close(ready)
		want = append(append(append(want, b...), s...), byte(k))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatal("a block was written before it was made")
	}
}
