//go:build !(goexperiment.simd && amd64)

package export

// Without GOEXPERIMENT=simd (or off amd64) addDelta's scalar loop does all.
func addRows4Vector(v, b, a []float32, r, in, n int) bool { return false }
