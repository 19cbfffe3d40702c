//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"runtime"
	"simd/archsimd"
	"sync"
	"time"
)

// widestFMAPeak is the CPU's fused multiply-add peak at its widest vectors
// (512-bit where it has AVX-512, else 256-bit), in GFLOP/s of wall time and
// of process CPU time on every core, the best of three runs, and the
// vector width in bits.
func widestFMAPeak() (wall, perCPU float64, bits int) {
	for range 3 {
		w, c, n := fmaProbe()
		wall, perCPU, bits = max(wall, w), max(perCPU, c), n
	}
	return wall, perCPU, bits
}

// fmaProbe is one run of the widest fused multiply-add loop on every core
// (about 50 ms on an idle machine): BenchmarkTrainStep runs it beside
// each step, so that a step slowed by the host is set against a peak
// measured under the same conditions.
func fmaProbe() (wall, perCPU float64, bits int) {
	if !archsimd.X86.AVX512() {
		wall, perCPU = peakLoop(true)
		return wall, perCPU, 256
	}
	wall, perCPU = peakLoop16()
	return wall, perCPU, 512
}

// peakLoop16 is peakLoop's fused loop on 16-lane vectors.
func peakLoop16() (wall, perCPU float64) {
	const iters = 20_000_000
	procs := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	sink := make([]float32, 16*procs)
	c0 := processCPU()
	t0 := time.Now()
	for p := range procs {
		wg.Go(func() { fmaChains16(iters, sink[16*p:16*p+16]) })
	}
	wg.Wait()
	flop := float64(10*16*2) * iters * float64(procs) / 1e9
	return flop / time.Since(t0).Seconds(), flop / (processCPU() - c0)
}

// fmaChains16 is fmaChains with 16 lanes: ten independent chains, started
// apart (see chainStart).
func fmaChains16(iters int, out []float32) {
	c, d := archsimd.BroadcastFloat32x16(0.999), archsimd.BroadcastFloat32x16(0.001)
	s := func(i int) archsimd.Float32x16 { return archsimd.BroadcastFloat32x16(float32(i + 1)) }
	a0, a1, a2, a3, a4 := s(0), s(1), s(2), s(3), s(4)
	a5, a6, a7, a8, a9 := s(5), s(6), s(7), s(8), s(9)
	for range iters {
		a0, a1, a2, a3, a4 = a0.MulAdd(c, d), a1.MulAdd(c, d), a2.MulAdd(c, d), a3.MulAdd(c, d), a4.MulAdd(c, d)
		a5, a6, a7, a8, a9 = a5.MulAdd(c, d), a6.MulAdd(c, d), a7.MulAdd(c, d), a8.MulAdd(c, d), a9.MulAdd(c, d)
	}
	sum := a0.Add(a1).Add(a2).Add(a3).Add(a4).Add(a5).Add(a6).Add(a7).Add(a8).Add(a9)
	sum.Store((*[16]float32)(out))
}

// readProbes are the ways readBandwidth reads a core's part where the
// CPU has AVX-512: the generated loops (readS<s>[PF], gemm_bf16_amd64.s)
// with 1, 2, 4 or 8 streams per core, each without software prefetch and
// with it 1 KiB or 4 KiB ahead into L1 (T0) or L2 (T1), the one-token
// bf16 kernels' choice, and the 512-bit archsimd sum (four chains, one
// stream) the probe used before; elsewhere the 64-bit sum.
func readProbes() []readProbe {
	if !archsimd.X86.AVX512() {
		return []readProbe{{"words", func(s []uint64) uint64 { return sumWords(s) }}}
	}
	type kernel = func(*uint64, int, int, int, *[8]uint64)
	kernels := map[int][3]kernel{
		1: {readS1, readS1T0, readS1T1}, 2: {readS2, readS2T0, readS2T1},
		4: {readS4, readS4T0, readS4T1}, 8: {readS8, readS8T0, readS8T1},
	}
	ps := []readProbe{{"simd", sumWordsWide}}
	add := func(name string, k kernel, n, dist int) {
		ps = append(ps, readProbe{name, func(s []uint64) uint64 { return readStreamsSum(k, n, dist, s) }})
	}
	for _, n := range []int{1, 2, 4, 8} {
		ks := kernels[n]
		add(fmt.Sprintf("S%d", n), ks[0], n, 0)
		for _, dist := range []int{1 << 10, 4 << 10} {
			add(fmt.Sprintf("S%dT0-%dK", n, dist>>10), ks[1], n, dist)
			add(fmt.Sprintf("S%dT1-%dK", n, dist>>10), ks[2], n, dist)
		}
	}
	return ps
}

// readStreamsSum reads s (a multiple of 32·streams words) as streams equal
// runs at once with kernel k and returns the sum of its words.
func readStreamsSum(k func(*uint64, int, int, int, *[8]uint64), streams, dist int, s []uint64) uint64 {
	run := len(s) / streams &^ 31
	if run == 0 {
		return sumWords(s)
	}
	var out [8]uint64
	k(&s[0], 8*run, run/32, dist, &out)
	var sum uint64
	for _, v := range out {
		sum += v
	}
	return sum + sumWords(s[streams*run:])
}

// sumWordsWide sums s (a multiple of 32 words) with 512-bit loads, four
// independent chains of 64 bytes each, where the CPU has AVX-512; else
// sumWords.
func sumWordsWide(s []uint64) uint64 {
	if !archsimd.X86.AVX512() {
		return sumWords(s)
	}
	var a, b, c, d archsimd.Uint64x8
	for i := 0; i+32 <= len(s); i += 32 {
		a = a.Add(archsimd.LoadUint64x8((*[8]uint64)(s[i:])))
		b = b.Add(archsimd.LoadUint64x8((*[8]uint64)(s[i+8:])))
		c = c.Add(archsimd.LoadUint64x8((*[8]uint64)(s[i+16:])))
		d = d.Add(archsimd.LoadUint64x8((*[8]uint64)(s[i+24:])))
	}
	var out [8]uint64
	a.Add(b).Add(c).Add(d).Store(&out)
	archsimd.ClearAVXUpperBits()
	var sum uint64
	for _, v := range out {
		sum += v
	}
	return sum
}
