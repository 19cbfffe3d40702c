package main

import (
	"testing"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// The committed assembly, declarations and tables are what the generator
// prints: run go generate in lib/engine after changing it.
func TestCommittedFilesMatchGenerator(t *testing.T) {
	asm, stubs, tables, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	asmout.CheckCommitted(t, map[string][]byte{asmFile: asm, stubFile: stubs, tableFile: tables})
}
