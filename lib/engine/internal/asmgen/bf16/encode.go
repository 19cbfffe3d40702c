package main

import (
	"fmt"
	"strings"
)

// Go's assembler (go1.26) knows neither AMX nor AVX512-BF16, so this file
// encodes those instructions as BYTE directives; the rest is ordinary Go
// assembly text.

// gp numbers the general registers as the hardware does.
var gp = map[string]int{
	"AX": 0, "CX": 1, "DX": 2, "BX": 3, "SP": 4, "BP": 5, "SI": 6, "DI": 7,
	"R8": 8, "R9": 9, "R10": 10, "R11": 11, "R12": 12, "R13": 13, "R14": 14, "R15": 15,
}

func bit(v, b int) int { return (v >> b) & 1 }

// bytesLine is a BYTE directive for bs, with the instruction it encodes as
// a comment.
func bytesLine(comment string, bs ...int) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("BYTE $0x%02x", b&0xff)
	}
	return "\t" + strings.Join(parts, "; ") + " // " + comment + "\n"
}

// vex3 is a three-byte VEX prefix for map 0F38 with W0, L0 (AMX).
func vex3(r, x, b, vvvv, pp int) []int {
	return []int{0xc4, (1-bit(r, 3))<<7 | (1-bit(x, 3))<<6 | (1-bit(b, 3))<<5 | 0x02, (^vvvv&0xf)<<3 | pp}
}

// sibMem encodes [base + index*scale] (index -1: none) with the register
// field reg: mod 00 (base is never BP or R13 here), rm 100, then the SIB
// byte.
func sibMem(reg, base, index, scale int) []int {
	if base&7 == 5 || index == 4 {
		panic("sibMem: base BP/R13 or index SP")
	}
	ss := map[int]int{1: 0, 2: 1, 4: 2, 8: 3}[scale]
	if index < 0 {
		index, ss = 4, 0
	}
	return []int{(reg&7)<<3 | 4, ss<<6 | (index&7)<<3 | base&7}
}

// amx0F38 encodes a VEX 0F38 AMX instruction with a [base+index] operand.
func amxMem(comment string, pp, op, tmm int, base, index string) string {
	b, x := gp[base], gp[index]
	bs := append(vex3(0, x, b, 0, pp), op)
	return bytesLine(comment, append(bs, sibMem(tmm, b, x, 1)...)...)
}

func ldtilecfg(base string) string {
	b := gp[base]
	if b&7 == 4 || b&7 == 5 {
		panic("ldtilecfg base")
	}
	return bytesLine("LDTILECFG ("+base+")", append(vex3(0, 0, b, 0, 0), 0x49, b&7)...)
}

func tilerelease() string {
	return bytesLine("TILERELEASE", append(vex3(0, 0, 0, 0, 0), 0x49, 0xc0)...)
}

func tilezero(t int) string {
	return bytesLine(fmt.Sprintf("TILEZERO TMM%d", t), append(vex3(0, 0, 0, 0, 3), 0x49, 0xc0|t<<3)...)
}

func tileloadd(t int, base, index string) string {
	return amxMem(fmt.Sprintf("TILELOADD TMM%d, (%s)(%s*1)", t, base, index), 3, 0x4b, t, base, index)
}

func tilestored(t int, base, index string) string {
	return amxMem(fmt.Sprintf("TILESTORED (%s)(%s*1), TMM%d", base, index, t), 2, 0x4b, t, base, index)
}

// tdpbf16ps: dst += a·b (a: rows × bf16 pairs, b: pairs × columns, VNNI).
func tdpbf16ps(dst, a, b int) string {
	return bytesLine(fmt.Sprintf("TDPBF16PS TMM%d, TMM%d, TMM%d", dst, a, b),
		append(vex3(0, 0, 0, b, 2), 0x5c, 0xc0|dst<<3|a)...)
}

// evex is the EVEX prefix for map 0F38, W0, 512 bits, no mask: reg is the
// ModRM.reg register, v the NDS register, rmx/rmb the high bits of the rm
// operand (X and B), bcst the broadcast bit.
func evex(reg, v, x, b, pp, bcst int) []int {
	p0 := (1-bit(reg, 3))<<7 | (1-bit(x, 3))<<6 | (1-bit(b, 3))<<5 | (1-bit(reg, 4))<<4 | 0x02
	p1 := (^v&0xf)<<3 | 0x04 | pp
	p2 := 0x40 | bcst<<4 | (1-bit(v, 4))<<3
	return []int{0x62, p0, p1, p2}
}

// vdpbf16psReg: zd += pairwise products of zs1 and zs2 (bf16 pairs).
func vdpbf16psReg(zd, zs1, zs2 int) string {
	// For a register rm, EVEX.X extends it to Z16-Z31.
	bs := append(evex(zd, zs1, zs2>>1, zs2, 2, 0), 0x52, 0xc0|(zd&7)<<3|zs2&7)
	return bytesLine(fmt.Sprintf("VDPBF16PS Z%d, Z%d, Z%d", zs2, zs1, zd), bs...)
}

// vdpbf16psBcst: zd += zs1 · the dword at [base+index*scale] broadcast
// (index "": none).
func vdpbf16psBcst(zd, zs1 int, base, index string, scale int) string {
	b, x := gp[base], -1
	mem := "(" + base + ")"
	if index != "" {
		x = gp[index]
		mem += fmt.Sprintf("(%s*%d)", index, scale)
	}
	bs := append(evex(zd, zs1, max(x, 0), b, 2, 1), 0x52)
	bs = append(bs, sibMem(zd, b, x, scale)...)
	return bytesLine(fmt.Sprintf("VDPBF16PS.BCST %s, Z%d, Z%d", mem, zs1, zd), bs...)
}

// vcvtne2ps2bf16Reg: zd = bf16(zhi) : bf16(zlo), rounded to nearest even
// (zlo's 16 values in the lower half).
func vcvtne2ps2bf16Reg(zd, zhi, zlo int) string {
	bs := append(evex(zd, zhi, zlo>>1, zlo, 3, 0), 0x72, 0xc0|(zd&7)<<3|zlo&7)
	return bytesLine(fmt.Sprintf("VCVTNE2PS2BF16 Z%d, Z%d, Z%d", zlo, zhi, zd), bs...)
}
