//go:build !(goexperiment.simd && amd64)

package jsonscan

const vectorMin = 0

func useVector() bool { return false }

func plainPrefixVector(s string) int { return plainPrefixBytes(s) }
