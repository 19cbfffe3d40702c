//go:build !(goexperiment.simd && amd64)

package export

// Without GOEXPERIMENT=simd (or off amd64) the scalar loops (fp8.go,
// latent_merge.go addDelta) do all.

func fp8EncodeVector(dst []byte, src []float32, b int, inv []float32) bool { return false }

func fp8DecodeVector(dst []float32, src []byte, b int, s []float32) bool { return false }

func absMaxVector(src []float32, b int, m []uint32) bool { return false }

func addRows4Vector(v, b, a []float32, r, in, n int) bool { return false }
