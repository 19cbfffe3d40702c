package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedOutput requires the committed assembly and declarations to
// be what the generator prints: edit the generator, then run go generate
// in lib/engine.
func TestCommittedOutput(t *testing.T) {
	asm, decl, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{"gemm_fwd_avx2_amd64.s": asm, "gemm_fwd_avx2_stub_amd64.go": decl} {
		got, err := os.ReadFile(filepath.Join("..", "..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("lib/engine/%s differs from the generator's output: run go generate in lib/engine", name)
		}
	}
}
