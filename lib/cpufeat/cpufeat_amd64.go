package cpufeat

import "github.com/tinkershell/tinker/lib/lazy"

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

func xgetbv() (eax, edx uint32)

// flags are the extensions the kernels choose by, each with the operating
// system's consent to its registers where it has some.
type flags struct {
	avx2FMA    bool // AVX2 and FMA3 with the YMM state
	avx512     bool // AVX-512 F, CD, BW, DQ and VL with the ZMM and mask state
	avx512BF16 bool // avx512 and AVX512-BF16 (VDPBF16PS)
	amxBF16    bool // AMX-TILE and AMX-BF16 (Linux grants the tile state on request)
}

// probed reads the flags once, where first asked: as the runtime and
// x/sys/cpu read them, but only what the kernels need. A lazy.Value
// literal, not sync.OnceValue, which would be a call at every start.
var probed = lazy.Value[flags]{New: probe}

func probe() flags {
	const (
		fma1     = 1 << 12 // leaf 1, ECX
		osxsave1 = 1 << 27
		avx1     = 1 << 28
		avx2     = 1 << 5 // leaf 7, EBX
		avx512F  = 1 << 16
		avx512DQ = 1 << 17
		avx512CD = 1 << 28
		avx512BW = 1 << 30
		avx512VL = 1 << 31
		amxBF16  = 1 << 22 // leaf 7, EDX
		amxTile  = 1 << 24
		bf16     = 1 << 5 // leaf 7 sub-leaf 1, EAX
	)
	var f flags
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return f
	}
	_, _, ecx1, _ := cpuid(1, 0)
	var osAVX, osAVX512 bool
	if ecx1&osxsave1 != 0 {
		xcr0, _ := xgetbv()
		osAVX = xcr0&0x6 == 0x6 // XMM, YMM
		// Opmask, ZMM0-15's upper halves, ZMM16-31. macOS grants them on
		// first use and reports them clear until then: there, without
		// GOEXPERIMENT=simd, the kernels stay on AVX2.
		osAVX512 = osAVX && xcr0&0xe0 == 0xe0
	}
	eax7, ebx7, _, edx7 := cpuid(7, 0)
	all := func(v, bits uint32) bool { return v&bits == bits }
	f.avx2FMA = osAVX && all(ecx1, avx1|fma1) && all(ebx7, avx2)
	f.avx512 = osAVX512 && all(ebx7, avx512F|avx512CD|avx512BW|avx512DQ|avx512VL)
	f.amxBF16 = all(edx7, amxTile|amxBF16)
	if f.avx512 && eax7 >= 1 {
		eax71, _, _, _ := cpuid(7, 1)
		f.avx512BF16 = all(eax71, bf16)
	}
	return f
}

// AVX512BF16 reports AVX-512 (as AVX512 does) and AVX512-BF16's VDPBF16PS
// (Cooper Lake, Sapphire Rapids, Zen 4 and later).
func AVX512BF16() bool { return AVX512() && probed.Get().avx512BF16 }

// AMXBF16 reports AMX tiles with the bf16 product TDPBF16PS (Sapphire
// Rapids and later). Linux still has to grant the tile state
// (arch_prctl(ARCH_REQ_XCOMP_PERM)).
func AMXBF16() bool { return probed.Get().amxBF16 }
