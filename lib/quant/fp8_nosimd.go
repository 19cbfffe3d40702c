//go:build !(goexperiment.simd && amd64)

package quant

// Without GOEXPERIMENT=simd (or off amd64) the scalar loops (fp8.go,
// int4.go) do all.

func fp8EncodeVector(dst []byte, src []float32, b int, inv []float32) bool { return false }

func fp8DecodeVector(dst []float32, src []byte, b int, s []float32) bool { return false }

func absMaxVector(src []float32, b int, m []uint32) bool { return false }
