//go:build !arm64

package engine

// fma32 is x·y + z rounded once, in software (fma32Soft): Go has no
// float32 fused multiply-add it emits reliably here (see fma32_hw.go). On
// amd64 the vector kernels do the products; this runs on CPUs without
// AVX2 and FMA3 and in the vector kernels' few-column tails.
func fma32(x, y, z float32) float32 { return fma32Soft(x, y, z) }
