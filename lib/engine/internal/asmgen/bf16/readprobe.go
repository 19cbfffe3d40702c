package main

import (
	"fmt"
	"strings"
)

// readStreams are the read-bandwidth probe's loops (the benchmarks'
// readBandwidth in lib/engine): what decoding could stream from memory,
// measured with the loads a kernel would use. One core's loads alone do
// not reach the limit: the L2 streamer follows each sequence of lines
// only within a 4 KiB page and then starts over, so a single stream spends
// part of every page waiting. Several streams at once (each its own page)
// and software prefetch a distance ahead (which crosses pages) keep more
// lines in flight; the probe times every variant and takes the best.
var readStreams = []int{1, 2, 4, 8}

// readKernel generates readS<s><pf>(p, stride, n, dist, out): s streams
// from p, stride bytes apart, each read 256 bytes (four 512-bit loads) per
// step for n steps, with PREFETCH<pf> (T0: into L1, T1: into L2; "":
// none) dist bytes ahead of every line; the 64-bit sums go to out (a test
// checks them, and they keep the loads honest).
func readKernel(s int, pf string) (string, string) {
	name := fmt.Sprintf("readS%d%s", s, pf)
	regs := []string{"SI", "DI", "R8", "R9", "R10", "R11", "R12", "R13"}[:s]
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, "\t"+format+"\n", a...) }
	fmt.Fprintf(&b, "\n// func %s(p *uint64, stride int, n int, dist int, out *[8]uint64)\n", name)
	fmt.Fprintf(&b, "TEXT ·%s(SB), NOSPLIT, $0-40\n", name)
	p("MOVQ p+0(FP), SI")
	p("MOVQ stride+8(FP), DX")
	p("MOVQ n+16(FP), CX")
	p("MOVQ dist+24(FP), BX")
	for i := 1; i < s; i++ {
		p("LEAQ (%s)(DX*1), %s", regs[i-1], regs[i])
	}
	for z := range 4 {
		p("VPXORQ Z%d, Z%d, Z%d", z, z, z)
	}
	p("TESTQ CX, CX")
	p("JZ %s_done", name)
	fmt.Fprintf(&b, "%s_loop:\n", name)
	for _, r := range regs {
		for l := range 4 {
			if pf != "" {
				p("PREFETCH%s %d(%s)(BX*1)", pf, 64*l, r)
			}
			p("VPADDQ %d(%s), Z%d, Z%d", 64*l, r, l, l)
		}
	}
	for _, r := range regs {
		p("ADDQ $256, %s", r)
	}
	p("DECQ CX")
	p("JNZ %s_loop", name)
	fmt.Fprintf(&b, "%s_done:\n", name)
	p("VPADDQ Z1, Z0, Z0")
	p("VPADDQ Z3, Z2, Z2")
	p("VPADDQ Z2, Z0, Z0")
	p("MOVQ out+32(FP), AX")
	p("VMOVDQU64 Z0, (AX)")
	p("VZEROUPPER")
	p("RET")
	return name, b.String()
}
