package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// docs/architecture.md tells a newcomer which files to touch; every path it
// names in backquotes must exist, so the map cannot drift from the tree.
func TestArchitectureFilesExist(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	pathRE := regexp.MustCompile("`((?:cmd|shell|builtins|lib|golden|docs|scripts)/[A-Za-z0-9_./*-]*)`")
	n := 0
	for _, m := range pathRE.FindAllStringSubmatch(string(b), -1) {
		p := m[1]
		n++
		// A pattern such as builtins/ops_*.go must match at least one file.
		if hits, _ := filepath.Glob(filepath.Join(repoRoot, filepath.Clean(p))); len(hits) == 0 {
			t.Errorf("docs/architecture.md names %s, which does not exist", m[1])
		}
	}
	if n < 20 {
		t.Fatalf("found only %d paths in docs/architecture.md; has the file lost its map?", n)
	}
}
