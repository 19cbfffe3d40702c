package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tinkershell/tinker/lib/engine/internal/asmgen/asmout"
)

// rowMultiVecs are the vector counts of the generated fwdRowMulti
// kernels: a decoding step of two or three rows (fwdRowsLong).
var rowMultiVecs = []int{2, 3}

// rowMulti generates fwdRowMulti<V><F32|BF16>(x0, …, x<V-1>, w, stride,
// n, span, out): fwdRowLong's four streams span elements apart for V
// vectors at once, each weight chunk loaded and widened once for all of
// them: 16/V rows a call rounded down to a power of two (two rows of
// each stream for two vectors, one for three). out[4·g·v + s·g + r]
// (g rows a stream, r < g) = Σ_k x_v[k]·w[s·span + r·stride + k], each
// one accumulator adding its chunks in ascending order with fwdRowLong's
// widening, so every output has the bits of that vector's fwdRowLong
// (and dotLanes). fwdRowLong run once a vector reads each weight line
// again from L1 or L2 and widens it again: at two and three vectors a
// step, the kernel's work grows by a whole one-vector pass a vector.
func rowMulti(ctx *build.Context, bf bool, vecs int) {
	const streams = 4
	groups := 1
	for 2*groups*streams*vecs <= 16 {
		groups *= 2
	}
	w := weightsOf(bf)
	args := ""
	for v := range vecs {
		args += fmt.Sprintf("x%d, ", v)
	}
	asmout.Kernel(ctx, fmt.Sprintf("fwdRowMulti%d%s", vecs, w.Suffix),
		fmt.Sprintf("func(%s *float32, w %s, stride, n, span int, out *[16]float32)", args[:len(args)-2], w.GoType))
	if bf {
		ctx.VMOVDQU32(row16WidenCtl, row16Ctl)
	}
	xs := make([]reg.GPVirtual, vecs)
	for v := range xs {
		xs[v] = ctx.GP64()
		ctx.Load(ctx.Param(fmt.Sprintf("x%d", v)), xs[v])
	}
	a := loadLongArgs(ctx, w)
	pc, pw, cnt := ctx.GP64(), ctx.GP64(), ctx.GP64()
	u := 64 / (16 * w.Size) // chunks per weight line
	at := func(s, disp int) Mem { return a.at(pw, s, disp) }
	// xz is vector v's chunk: Z16, Z23, Z24 (Z17-Z20 the streams'
	// weights, Z21 the widening's control).
	xz := func(v int) reg.VecPhysical { return []reg.VecPhysical{reg.Z16, reg.Z23, reg.Z24}[v] }
	// acc is the accumulator of out[i], as row16Finish's tree reads them
	// (fwdRowLong's row i in zmm(4·(i%4) + i/4)).
	acc := func(v, s, g int) reg.VecPhysical {
		i := 4*groups*v + s*groups + g
		return zmm(4*(i%4) + i/4)
	}
	for g := range groups {
		weight := func(s int, m Mem, mask reg.Register) {
			z := zmm(17 + s)
			switch {
			case w.BF && mask == nil:
				ctx.VBROADCASTI32X8(m, z)
				ctx.VPSHUFB(row16Ctl, z, z)
			case w.BF:
				w.load(ctx, m, z, mask)
				swapQuarters(ctx, z)
			default:
				w.load(ctx, m, z, mask)
			}
			for v := range vecs {
				ctx.VFMADD231PS(xz(v), z, acc(v, s, g))
			}
		}
		xload := func(c int, mask reg.Register) {
			for v := range vecs {
				loadX(ctx, Mem{Base: xs[v], Index: pc, Scale: 1, Disp: 64 * c}, xz(v), mask)
				if w.BF {
					swapQuarters(ctx, xz(v))
				}
			}
		}
		step := func(mask reg.Register) {
			xload(0, mask)
			for s := range streams {
				weight(s, at(s, 0), mask)
			}
		}
		a.group(ctx, g, u, w.Size, pc, pw, cnt, func() { ctx.XORQ(pc, pc) }, func() {
			for s := range streams {
				ctx.PREFETCHT1(at(s, rowLongAhead))
			}
			for c := range u {
				xload(c, nil)
				for s := range streams {
					weight(s, at(s, 16*w.Size*c), nil)
				}
			}
		}, step)
	}
	row16Finish(ctx, bf)
}
