//go:build !(goexperiment.simd && amd64)

package quant

// No vector unit here: mxfp4.go's loop does all.
func mxfp4DecodeVector(blocks, scales []byte, v []float32) bool { return false }

func mxfp4EncodeVector(v []float32, out []byte) (byte, bool) { return 0, false }
