//go:build !(goexperiment.simd && amd64)

package export

// Without GOEXPERIMENT=simd (or off amd64) fp8.go's scalar loops do all.

func fp8EncodeVector(dst []byte, src []float32, inv float32) int { return 0 }

func fp8DecodeVector(dst []float32, src []byte, s float32) int { return 0 }

func absMaxVector(src []float32) (uint32, int) { return 0, 0 }

func addRows4Vector(v, b, a []float32, r, in, n int) bool { return false }
