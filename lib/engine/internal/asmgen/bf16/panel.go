package main

import (
	"fmt"
	"strings"
)

// panelFetch is how many k steps (1 KiB of each weight block) ahead the
// prefill kernel prefetches its two weight streams into L1. Paired on one
// core against amxBF16T2N2 (under load): 1, 2 and 4 steps ahead each took
// 0.98-0.99x the time on the 0.6B shapes of 1024 columns and 0.94-0.96x
// on the down projection's 3072; prefetching the token rows as well was
// slower (1.02-1.13x).
const panelFetch = 2

// panelKernels appends the prefill products' kernel (amxFetchKernel) and
// its declaration.
func panelKernels(asm, decls *strings.Builder) {
	name, body := amxFetchKernel()
	asm.WriteString(body)
	decls.WriteString("\n//go:noescape\nfunc " + name +
		"(cfg *[64]byte, x *uint16, ldx int, w *uint16, wstride int, kc int, nb int, out *float32, ldo int)\n")
}

// amxFetchKernel generates amxBF16W2N2: amxBF16T2N2 (two blocks of 16
// tokens, two weight blocks a step) with its weight streams (DI, R10)
// prefetched panelFetch k steps ahead after the first tile product of
// each step. The same tiles in the same order: the same bits.
func amxFetchKernel() (string, string) {
	const name = "amxBF16W2N2"
	_, body := amxKernel(2, 2)
	var fetch strings.Builder
	for _, w := range []string{"DI", "R10"} {
		for l := range 16 {
			fmt.Fprintf(&fetch, "\tPREFETCHT0 %d(%s)\n", 1024*panelFetch+64*l, w)
		}
	}
	first := tdpbf16ps(0, 4, 6)
	if strings.Count(body, first) != 1 {
		panic("amxFetchKernel: amxBF16T2N2 no longer has one TMM0 += TMM4·TMM6")
	}
	body = strings.Replace(body, first, first+fetch.String(), 1)
	return name, strings.ReplaceAll(body, "amxBF16T2N2", name)
}
