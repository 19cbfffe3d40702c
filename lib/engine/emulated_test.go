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
	if os.Getenv("TINKER_ENGINE_EMULATED") == "" {
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
