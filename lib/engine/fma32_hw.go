//go:build arm64

package engine

// fma32 is x·y + z rounded once: on arm64 the compiler turns a float32
// multiply feeding an add into one FMADDS (it has no competing rule there),
// the rounding of fma32Soft. On amd64 built for GOAMD64=v3 it may too, but
// not always (folding a load into the add first leaves MULSS and ADDSS),
// so amd64 takes fma32Soft. TestScalarKernelsFuse checks the kernels' bits.
func fma32(x, y, z float32) float32 { return x*y + z }
