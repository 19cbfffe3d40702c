package engine

import (
	"os"
	"testing"
)

// testModels is the tiny models a test runs over. In the emulated runs of
// `make test` (mk/engine.mk sets TINKER_ENGINE_EMULATED), where qemu makes
// every instruction tens of times dearer, it is the dense ones only: the
// kernels those runs exist to check are the same for every family, and
// the mixture-of-experts and GPT-OSS tests still run there under their own
// names. Natively every tiny model runs.
func testModels(t testing.TB) []string {
	all := TinyModels()
	if !emulated() {
		return all
	}
	var dense []string
	for _, name := range all {
		c, err := TinyConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		if c.Experts == 0 && !c.moeFamily() {
			dense = append(dense, name)
		}
	}
	return dense
}

// emulated reports whether the tests run in qemu (see testModels).
func emulated() bool { return os.Getenv("TINKER_ENGINE_EMULATED") != "" }

// nativeOnly skips a float64 finite-difference check of a whole model
// family in the emulated runs: it spends its time in the float64 reference
// (plain Go, the same on every CPU), not in the kernels those runs are for,
// and the native run of the same `make test` runs it in full.
func nativeOnly(t *testing.T) {
	if emulated() {
		t.Skip("checked by the native run; the emulated runs check kernels")
	}
}
