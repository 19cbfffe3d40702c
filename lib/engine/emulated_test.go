package engine

import (
	"os"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// testModels is the tiny models a test runs over. In the emulated runs of
// `make test` (mk/engine.mk sets TINKER_ENGINE_EMULATED), where qemu makes
// every instruction tens of times dearer, it is tiny-llama only: the
// kernels those runs exist to check are the same for every family, one
// small model end to end is what those runs add to the kernel equality
// tests, and the MoE and GPT-OSS reference tests run there under their own
// names. Natively every tiny model runs.
func testModels(t testing.TB) []string {
	if emulated() {
		return []string{models.TinyLlama}
	}
	return TinyModels()
}

// emulated reports whether the tests run in qemu (see testModels).
func emulated() bool { return os.Getenv("TINKER_ENGINE_EMULATED") != "" }

// qemuFew returns few in the emulated runs and all natively: a kernel
// test that loops over many shapes takes the ones that reach each of the
// kernel's cases under qemu, and the native run takes them all.
func qemuFew[T any](all, few []T) []T {
	if emulated() {
		return few
	}
	return all
}

// nativeOnly skips a float64 finite-difference check of a whole model
// family in the emulated runs: it spends its time in the float64 reference
// (plain Go, the same on every CPU), not in the kernels those runs are for,
// and the native run of the same `make test` runs it in full.
func nativeOnly(t *testing.T) {
	if emulated() {
		t.Skip("checked by the native run; the emulated runs check kernels")
	}
}
