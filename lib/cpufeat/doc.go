// Package cpufeat says which x86 vector extensions the kernels of the
// engine, quant and export may use, without golang.org/x/sys/cpu: that
// package's init issues six CPUID instructions at every start of every
// program linking it, and in a virtual machine each CPUID traps to the
// hypervisor (4-7 µs apiece on the project's EPYC VM, ~0.03 ms of
// `tinker -c '1+1'`). The runtime has already read the base flags (AVX2,
// FMA, AVX-512), so with GOEXPERIMENT=simd they come from simd/archsimd at
// no cost; the bf16 and AMX flags, which archsimd does not expose (nor,
// without the experiment, the base flags), come from CPUID on first use.
// On other architectures the package is empty: its callers are amd64 files.
// docs/architecture.md, "Dependencies dropped from the binary, and what
// the rest cost at init", has the measurements.
package cpufeat
