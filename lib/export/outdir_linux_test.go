package export

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// An output file asks for writeback every writebackBytes as it grows
// (so the disk works during the export, not all at its fsync), and its
// bytes and count are unchanged by it.
func TestCountWriterWriteback(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := &outDir{}
	c := &countWriter{f: f, o: o}
	var want []byte
	for i := range 2*writebackBytes/(1<<20) + 3 {
		p := bytes.Repeat([]byte{byte(i)}, 1<<20)
		want = append(want, p...)
		if n, err := c.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if c.queued != 2*writebackBytes {
		t.Errorf("writeback queued %d bytes, want %d", c.queued, 2*writebackBytes)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || o.written != int64(len(want)) {
		t.Fatalf("file: %d bytes (counted %d), want %d", len(got), o.written, len(want))
	}
}
