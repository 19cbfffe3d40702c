package safetensors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteDir: a sharded directory's index maps every tensor to the file
// that holds it, and each file reads back its tensors' values.
func TestWriteDir(t *testing.T) {
	mk := func(name string, v float32) Tensor {
		x, err := FromFloat32(name, BF16, []int{1, 2}, []float32{v, -v})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	dir := t.TempDir()
	shards := [][]Tensor{{mk("b", 1), mk("a", 2)}, {mk("c", 3)}}
	if err := WriteDir(dir, shards); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	want := map[string]float32{"a": 2, "b": 1, "c": 3}
	for name, v := range want {
		f, err := ReadFile(filepath.Join(dir, idx.WeightMap[name]))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		x, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("%s is not in %s", name, idx.WeightMap[name])
		}
		got, err := x.Float32()
		if err != nil || got[0] != v || got[1] != -v {
			t.Errorf("%s = %v (%v), want [%v %v]", name, got, err, v, -v)
		}
	}
	if names := len(idx.WeightMap); names != 3 {
		t.Errorf("the index maps %d tensors, want 3", names)
	}
	one := t.TempDir()
	if err := WriteDir(one, shards[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(one, "model.safetensors")); err != nil {
		t.Errorf("one shard: %v", err)
	}
	if _, err := os.Stat(filepath.Join(one, IndexFile)); !os.IsNotExist(err) {
		t.Errorf("one shard wrote an index: %v", err)
	}
}
