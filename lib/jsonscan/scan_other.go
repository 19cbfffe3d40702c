//go:build !(goexperiment.simd && amd64)

package jsonscan

const (
	useVector = false
	vectorMin = 0
)

func plainPrefixVector(s string) int { return plainPrefixBytes(s) }
