package asmout

import (
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

var zmms = []reg.VecPhysical{reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7, reg.Z8, reg.Z9,
	reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15, reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20,
	reg.Z21, reg.Z22, reg.Z23, reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31}

// ZMM is the 512-bit register Zi, for kernels that place their
// accumulators themselves.
func ZMM(i int) reg.VecPhysical { return zmms[i] }

// Pointers returns n registers holding base + i·stride (row pointers).
func Pointers(ctx *build.Context, base, stride reg.Register, n int) []reg.GPVirtual {
	ps := make([]reg.GPVirtual, n)
	for i := range ps {
		ps[i] = ctx.GP64()
		if i == 0 {
			ctx.MOVQ(base, ps[i])
		} else {
			ctx.LEAQ(operand.Mem{Base: ps[i-1], Index: stride, Scale: 1}, ps[i])
		}
	}
	return ps
}
