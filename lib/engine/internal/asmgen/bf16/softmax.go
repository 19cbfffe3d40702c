package main

import (
	"fmt"
	"math"
	"strings"
)

// softmaxKernel generates bf16Softmax(dst, sc, n, scale, sink): the bf16
// path's attention softmax over one row of n scores (a multiple of 32;
// −Inf outside the query's keys), in three passes of float32 vectors:
// scale the scores in place and take their maximum with the sink logit
// (−Inf: none); replace each by e = exp(s − max) and add the e in two
// accumulators (columns mod 32 below 16, the others), then those, then
// the lanes, then the sink's term; write e / sum rounded to bfloat16 to
// dst. exp is exp2 of n = round(x·log2 e) times a degree-7 polynomial of
// the remainder (Cephes' expf), exactly zero below −87. The bits of an
// element depend on its row's scores only: columns of −Inf add exact
// zeros, so a row's leading or trailing chunks of them change nothing.
func softmaxKernel() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }
	bc := func(z int, f float32) {
		p("MOVL $0x%08x, AX", math.Float32bits(f))
		p("VPBROADCASTD AX, Z%d", z)
	}
	b.WriteString("\n// func bf16Softmax(dst *uint16, sc *float32, n int, scale float32, sink float32)\n")
	b.WriteString("TEXT ·bf16Softmax(SB), NOSPLIT, $0-32\n")
	p("MOVQ dst+0(FP), DI")
	p("MOVQ sc+8(FP), SI")
	p("MOVQ n+16(FP), CX")
	p("SHRQ $5, CX")
	p("VBROADCASTSS scale+24(FP), Z30")
	p("VBROADCASTSS sink+28(FP), Z2")
	p("VMOVAPS Z2, Z3")
	// Constants of exp: Z16 log2 e, Z17-18 ln 2 in two parts, Z19 the
	// floor, Z20-25 the polynomial, Z26 one.
	bc(16, math.Log2E)
	bc(17, 0.693359375)
	bc(18, -2.12194440e-4)
	bc(19, -87)
	for i, c := range []float32{1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1} {
		bc(20+i, c)
	}
	bc(26, 1)
	// Pass 1: scale, maximum.
	p("MOVQ SI, R8")
	p("MOVQ CX, R9")
	b.WriteString("bf16Softmax_max:\n")
	for h := range 2 {
		p("VMULPS %d(R8), Z30, Z%d", 64*h, h)
		p("VMOVUPS Z%d, %d(R8)", h, 64*h)
		p("VMAXPS Z%d, Z%d, Z%d", h, 2+h, 2+h)
	}
	p("ADDQ $128, R8")
	p("DECQ R9")
	p("JNZ bf16Softmax_max")
	p("VMAXPS Z3, Z2, Z2")
	reduce(p, "VMAXPS", 2)
	p("VBROADCASTSS X2, Z31")
	// Pass 2: exponentials and their sums.
	p("VXORPS Z4, Z4, Z4")
	p("VXORPS Z5, Z5, Z5")
	p("MOVQ SI, R8")
	p("MOVQ CX, R9")
	b.WriteString("bf16Softmax_exp:\n")
	for h := range 2 {
		p("VMOVUPS %d(R8), Z%d", 64*h, h)
		p("VSUBPS Z31, Z%d, Z%d", h, h)
		b.WriteString(expInPlace(h))
		p("VMOVUPS Z%d, %d(R8)", h, 64*h)
		p("VADDPS Z%d, Z%d, Z%d", h, 4+h, 4+h)
	}
	p("ADDQ $128, R8")
	p("DECQ R9")
	p("JNZ bf16Softmax_exp")
	p("VADDPS Z5, Z4, Z4")
	reduce(p, "VADDPS", 4)
	p("VBROADCASTSS sink+28(FP), Z0")
	p("VSUBPS Z31, Z0, Z0")
	b.WriteString(expInPlace(0))
	p("VADDSS X0, X4, X4")
	p("VDIVSS X4, X26, X0")
	p("VBROADCASTSS X0, Z29")
	// Pass 3: normalise and round.
	b.WriteString("bf16Softmax_out:\n")
	p("VMULPS (SI), Z29, Z0")
	p("VMULPS 64(SI), Z29, Z1")
	b.WriteString(vcvtne2ps2bf16Reg(2, 1, 0))
	p("VMOVDQU16 Z2, (DI)")
	p("ADDQ $128, SI")
	p("ADDQ $64, DI")
	p("DECQ CX")
	p("JNZ bf16Softmax_out")
	p("VZEROUPPER")
	p("RET")
	return b.String()
}

// reduce folds the 16 lanes of Z<z> with op into lane 0, halves first.
func reduce(p func(string, ...any), op string, z int) {
	p("VEXTRACTF32X8 $1, Z%d, Y6", z)
	p("%s Y6, Y%d, Y%d", op, z, z)
	p("VEXTRACTF128 $1, Y%d, X6", z)
	p("%s X6, X%d, X%d", op, z, z)
	p("VPERMILPS $0x4e, X%d, X6", z)
	p("%s X6, X%d, X%d", op, z, z)
	p("VPERMILPS $0xb1, X%d, X6", z)
	p("%s X6, X%d, X%d", op, z, z)
}

// expInPlace replaces Z<z> (x ≤ 0) by exp(x), zero where x < −87; it uses
// Z7-Z9 and K1 (constants in Z16-Z26).
func expInPlace(z int) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }
	p("VCMPPS $13, Z19, Z%d, K1", z) // x >= −87
	p("VMAXPS Z19, Z%d, Z%d", z, z)
	p("VMULPS Z16, Z%d, Z7", z)
	p("VRNDSCALEPS $0, Z7, Z7") // n
	p("VFNMADD231PS Z17, Z7, Z%d", z)
	p("VFNMADD231PS Z18, Z7, Z%d", z) // r
	p("VMOVAPS Z20, Z8")
	for c := 21; c <= 25; c++ {
		p("VFMADD213PS Z%d, Z%d, Z8", c, z)
	}
	p("VMULPS Z%d, Z%d, Z9", z, z)
	p("VFMADD213PS Z%d, Z9, Z8", z) // p·r² + r
	p("VADDPS Z26, Z8, Z8")
	p("VSCALEFPS Z7, Z8, Z8")
	p("VMOVAPS.Z Z8, K1, Z%d", z)
	return b.String()
}
