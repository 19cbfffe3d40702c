//go:build !(goexperiment.simd && amd64)

package quant

// No vector unit here: int4.go's loops do all.

func int4RowVector(packed, scales []byte, group int, dst []float32) bool { return false }

func int4QuantizeVector(src []float32, group int, packed, scales []byte) bool { return false }
