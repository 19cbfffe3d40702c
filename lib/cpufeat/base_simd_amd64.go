//go:build goexperiment.simd

package cpufeat

import "simd/archsimd"

// AVX2FMA reports AVX2 and FMA3 with the operating system's YMM state, as
// the runtime read them at start.
func AVX2FMA() bool { return archsimd.X86.AVX2() && archsimd.X86.FMA() }

// AVX512 reports AVX-512 F, CD, BW, DQ and VL with the operating system's
// ZMM state, as the runtime read them at start. Every CPU with BW has the
// other three; only Xeon Phi had F without BW.
func AVX512() bool { return archsimd.X86.AVX512() }
