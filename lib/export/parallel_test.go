package export

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// readParallel reads what one ReadAt reads, in pieces or not, and fails
// when the file ends early.
func TestReadParallel(t *testing.T) {
	data := make([]byte, 3<<20+17)
	r := rand.New(rand.NewPCG(15, 16))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "shard")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int{100, 1 << 20, 3<<20 + 10} {
		b := make([]byte, n)
		if err := readParallel(f, b, 7); err != nil || !bytes.Equal(b, data[7:7+n]) {
			t.Fatalf("%d bytes: err %v, or the bytes differ", n, err)
		}
	}
	if err := readParallel(f, make([]byte, 1<<20), int64(len(data))-1000); err == nil {
		t.Fatal("a read past the end passed")
	}
}

// parallelUnits runs every unit exactly once.
func TestParallelUnits(t *testing.T) {
	counts := make([]atomic.Int32, 1000)
	parallelUnits(len(counts), func(_, i int) { counts[i].Add(1) })
	for i := range counts {
		if c := counts[i].Load(); c != 1 {
			t.Fatalf("unit %d ran %d times", i, c)
		}
	}
}
