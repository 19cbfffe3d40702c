package main

import (
	"testing"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// TestCommittedOutput requires the committed assembly and declarations to
// be what the generator prints: edit the generator, then run go generate
// in lib/engine.
func TestCommittedOutput(t *testing.T) {
	asmout.CheckGenerated(t, "gemm_fwd_lanes_amd64.s", "gemm_fwd_lanes_stub_amd64.go", Generate)
}
