package cpufeat

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestAgreesWithXSysCPU checks the flags against golang.org/x/sys/cpu,
// which the kernels chose by before (kept as a test-only oracle), both
// through the exported functions (archsimd's flags in the simd build) and
// through probe, the CPUID reading the build without the experiment uses.
func TestAgreesWithXSysCPU(t *testing.T) {
	x := cpu.X86
	avx512 := x.HasAVX512F && x.HasAVX512CD && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL
	if avx512 != (x.HasAVX512F && x.HasAVX512BW) {
		t.Errorf("AVX-512 F %v, BW %v but CD %v, DQ %v, VL %v: the kernels' F+BW is not the full set here",
			x.HasAVX512F, x.HasAVX512BW, x.HasAVX512CD, x.HasAVX512DQ, x.HasAVX512VL)
	}
	p := probe()
	for _, c := range []struct {
		name             string
		got, probe, want bool
	}{
		{"AVX2FMA", AVX2FMA(), p.avx2FMA, x.HasAVX2 && x.HasFMA},
		{"AVX512", AVX512(), p.avx512, avx512},
		{"AVX512BF16", AVX512BF16(), p.avx512BF16, x.HasAVX512F && x.HasAVX512BF16},
		{"AMXBF16", AMXBF16(), p.amxBF16, x.HasAMXTile && x.HasAMXBF16},
	} {
		if c.got != c.want || c.probe != c.want {
			t.Errorf("%s() = %v, probe %v; x/sys/cpu says %v", c.name, c.got, c.probe, c.want)
		}
		t.Logf("%s: %v", c.name, c.got)
	}
}
