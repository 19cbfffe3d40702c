package main

import (
	"fmt"
	"strings"
)

// peakKernels generates avxBF16PeakReg(iters) and avxBF16PeakBcst(x,
// iters): 24 independent VDPBF16PS chains, iters steps, sources in
// registers or the second one a dword broadcast from x (L1-resident):
// the instruction's throughput on this CPU, which the benchmarks set the
// kernels against.
func peakKernels(asm, decls *strings.Builder) {
	for _, bcst := range []bool{false, true} {
		name := "avxBF16PeakReg"
		if bcst {
			name = "avxBF16PeakBcst"
		}
		var b strings.Builder
		p := func(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }
		fmt.Fprintf(&b, "\n// func %s(x *uint16, iters int)\n", name)
		fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-16\n", name)
		p("MOVQ x+0(FP), SI")
		p("MOVQ iters+8(FP), CX")
		for i := range 26 {
			p("VPXORD Z%d, Z%d, Z%d", i, i, i)
		}
		fmt.Fprintf(&b, "%s_k:\n", name)
		for i := range 24 {
			if bcst {
				b.WriteString(vdpbf16psBcst(i, 24+i%2, "SI", "", 1))
			} else {
				b.WriteString(vdpbf16psReg(i, 24, 25))
			}
		}
		p("DECQ CX")
		p("JNZ %s_k", name)
		p("VZEROUPPER")
		p("RET")
		asm.WriteString(b.String())
		decls.WriteString("\n//go:noescape\nfunc " + name + "(x *uint16, iters int)\n")
	}
}
