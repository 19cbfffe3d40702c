package models

import "testing"

// The cookbook's counts for Qwen3-MoE and GPT-OSS are those of the
// shared-outer scheme (serviceLoRACounts, checked against them in
// lineup_test.go), not of per-expert factors: a service adapter's
// hidden-side expert factor is one matrix ([1, ...]), as lib/peft shapes
// it and the local engine trains it.
func TestMoECountsAreSharedOuter(t *testing.T) {
	for _, name := range []string{"Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-235B-A22B-Instruct-2507", "openai/gpt-oss-20b", "openai/gpt-oss-120b"} {
		a, ok := Lookup(name)
		if !ok {
			t.Fatalf("%s not in the catalog", name)
		}
		perExpert := 0
		for i := 0; i < a.Layers; i++ {
			if a.IsMoELayer(i) {
				perExpert += 3 * a.Experts * (a.Hidden + a.MoEIntermediate)
			}
		}
		shared, _, _ := serviceLoRACounts(a)
		if want := loraPerRank[name][0]; shared != want || perExpert == want {
			t.Errorf("%s: cookbook mlp %d, shared-outer %d, per-expert %d", name, want, shared, perExpert)
		}
	}
}
