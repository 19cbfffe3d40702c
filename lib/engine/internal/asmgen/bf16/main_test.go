package main

import (
	"testing"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// TestCommittedOutput requires the committed assembly and declarations to
// be what the generator prints: edit the generator, then run go generate
// in lib/engine.
func TestCommittedOutput(t *testing.T) {
	asm, decls := generate()
	asmout.CheckCommitted(t, map[string][]byte{"gemm_bf16_amd64.s": []byte(asm), "gemm_bf16_stub_amd64.go": []byte(decls)})
}
