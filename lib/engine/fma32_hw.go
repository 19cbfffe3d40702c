//go:build arm64 || amd64.v3

package engine

// fma32 is x·y + z rounded once: the compiler fuses a float32 multiply
// feeding an add into one instruction on arm64 (FMADDS) and on amd64 built
// for GOAMD64=v3 or later (VFMADD231SS), the same rounding as fma32Soft.
func fma32(x, y, z float32) float32 { return x*y + z }
