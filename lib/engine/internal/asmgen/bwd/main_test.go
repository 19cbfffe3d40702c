package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The committed assembly, declarations and tables are what the generator
// prints: run go generate in lib/engine after changing it.
func TestCommittedFilesMatchGenerator(t *testing.T) {
	asm, stubs, tables, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{asmFile: asm, stubFile: stubs, tableFile: tables} {
		got, err := os.ReadFile(filepath.Join("..", "..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("lib/engine/%s differs from the generator's output: run go generate ./lib/engine", name)
		}
	}
}
