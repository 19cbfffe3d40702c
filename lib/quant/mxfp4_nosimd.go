//go:build !(goexperiment.simd && amd64)

package quant

// No vector unit here: mxfp4.go's loops do all.

func mxfp4DecodeVector(blocks, scales []byte, stride, n int, v []float32) bool { return false }

func mxfp4EncodeVector(v []float32, n int, out, scales []byte, stride, from int) int { return from }
