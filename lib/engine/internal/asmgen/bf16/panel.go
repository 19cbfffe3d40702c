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

// amxFetchKernel generates amxBF16W2N2, amxBF16T2N2 (two blocks of 16
// tokens, two weight blocks a step) with the weight streams prefetched
// panelFetch k steps ahead: the same tiles in the same order, so the
// same bits.
func amxFetchKernel() (string, string) {
	const name = "amxBF16W2N2"
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }
	fmt.Fprintf(&b, "\n// func %s(cfg *[64]byte, x *uint16, ldx int, w *uint16, wstride int, kc int, nb int, out *float32, ldo int)\n", name)
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-72\n", name)
	p("MOVQ cfg+0(FP), DI")
	b.WriteString(ldtilecfg("DI"))
	p("MOVQ ldx+16(FP), DX")
	p("MOVQ w+24(FP), R12")
	p("MOVQ wstride+32(FP), R8")
	p("MOVQ nb+48(FP), BX")
	p("MOVQ out+56(FP), AX")
	p("MOVQ ldo+64(FP), R9")
	p("MOVQ $64, R13")
	fmt.Fprintf(&b, "%s_step:\n", name)
	for i := range 4 {
		b.WriteString(tilezero(i))
	}
	p("MOVQ x+8(FP), SI")
	p("MOVQ DX, R11")
	p("SHLQ $4, R11")
	p("ADDQ SI, R11")
	p("MOVQ R12, DI")
	p("LEAQ (R12)(R8*1), R10")
	p("MOVQ kc+40(FP), CX")
	fmt.Fprintf(&b, "%s_k:\n", name)
	xs, ws := []string{"SI", "R11"}, []string{"DI", "R10"}
	for i := range 2 {
		b.WriteString(tileloadd(4+i, xs[i], "DX"))
	}
	for j := range 2 {
		b.WriteString(tileloadd(6+j, ws[j], "R13"))
	}
	b.WriteString(tdpbf16ps(0, 4, 6))
	for j := range 2 {
		for l := range 16 {
			p("PREFETCHT0 %d(%s)", 1024*panelFetch+64*l, ws[j])
		}
	}
	b.WriteString(tdpbf16ps(1, 4, 7))
	b.WriteString(tdpbf16ps(2, 5, 6))
	b.WriteString(tdpbf16ps(3, 5, 7))
	for i := range 2 {
		p("ADDQ $64, %s", xs[i])
	}
	for j := range 2 {
		p("ADDQ $1024, %s", ws[j])
	}
	p("DECQ CX")
	p("JNZ %s_k", name)
	// Stores: token block 0 at out, block 1 at out + 16·ldo.
	p("MOVQ R9, R11")
	p("SHLQ $4, R11")
	p("ADDQ AX, R11")
	outs := []string{"AX", "R11"}
	for i := range 2 {
		for j := range 2 {
			if j == 1 {
				p("ADDQ $64, %s", outs[i])
			}
			b.WriteString(tilestored(2*i+j, outs[i], "R9"))
		}
	}
	p("ADDQ $64, AX") // the stores moved AX by 64 already
	p("ADDQ R8, R12")
	p("ADDQ R8, R12")
	p("DECQ BX")
	p("JNZ %s_step", name)
	b.WriteString(tilerelease())
	p("RET")
	return name, b.String()
}
