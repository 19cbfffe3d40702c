package main

import (
	"testing"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// The committed assembly and declarations are what the generator prints:
// run go generate in lib/engine after changing it.
func TestCommittedFilesMatchGenerator(t *testing.T) {
	asmout.CheckGenerated(t, asmFile, stubFile, Generate)
}
