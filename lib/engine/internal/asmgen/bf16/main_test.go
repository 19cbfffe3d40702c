package main

import (
	"fmt"
	"strings"
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

// TestAVXKernelsPrefetch pins which AVX512-BF16 kernels prefetch their
// weights: each block's line avxWeightPrefetch ahead in every step of
// the one-token kernels and of the P variants of two to four tokens
// (avxBF16KernelsPf), none in the others.
func TestAVXKernelsPrefetch(t *testing.T) {
	for tn := 1; tn <= avxMaxT; tn++ {
		for n := 1; n <= avxMaxN; n++ {
			for _, suffix := range []string{"", "P"} {
				if tn == 1 && suffix == "P" {
					continue
				}
				pf := 0
				if tn == 1 || suffix == "P" {
					pf = avxWeightPrefetch
				}
				_, body := avxKernelPf(tn, n, pf, suffix)
				if tn > 1 && suffix == "" {
					_, body = avxKernel(tn, n)
				}
				want := 0
				if pf > 0 {
					want = n
				}
				if got := strings.Count(body, fmt.Sprintf("PREFETCHT1 %d(", avxWeightPrefetch)); got != want {
					t.Errorf("avxBF16T%dN%d%s: %d weight prefetches, want %d", tn, n, suffix, got, want)
				}
			}
		}
	}
}
