//go:build !(arm64 || amd64.v3)

package engine

// fma32 is x·y + z rounded once, in software (fma32Soft): this build has
// no float32 fused multiply-add the compiler would emit.
func fma32(x, y, z float32) float32 { return fma32Soft(x, y, z) }
