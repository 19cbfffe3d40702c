package export

import (
	"bytes"
	"errors"
	"math/rand/v2"
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
