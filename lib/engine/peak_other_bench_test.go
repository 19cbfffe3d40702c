//go:build !(goexperiment.simd && amd64)

package engine

// widestFMAPeak has no vector loop to time without GOEXPERIMENT=simd on
// amd64: the benchmarks report no peak and no utilisation.
func widestFMAPeak() (wall, perCPU float64, bits int) { return 0, 0, 0 }

// fmaProbe is widestFMAPeak: nothing to time in this build.
func fmaProbe() (wall, perCPU float64, bits int) { return 0, 0, 0 }

// sumWordsWide is sumWords: no vector loads to use in this build.
func sumWordsWide(s []uint64) uint64 { return sumWords(s) }

// readProbes is the 64-bit sum: no vector loads in this build.
func readProbes() []readProbe {
	return []readProbe{{"words", func(s []uint64) uint64 { return sumWords(s) }}}
}
