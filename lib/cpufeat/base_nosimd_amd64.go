//go:build !goexperiment.simd

package cpufeat

// AVX2FMA reports AVX2 and FMA3 with the operating system's YMM state.
func AVX2FMA() bool { return probed.Get().avx2FMA }

// AVX512 reports AVX-512 F, CD, BW, DQ and VL with the operating system's
// ZMM state. Every CPU with BW has the other three; only Xeon Phi had F
// without BW.
func AVX512() bool { return probed.Get().avx512 }
