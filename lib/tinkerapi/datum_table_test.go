package tinkerapi

import (
	"slices"
	"testing"
)

// LossFns is the table's names in order, each once, and every input a
// loss function needs has a fixed element type.
func TestLossFnTable(t *testing.T) {
	names := LossFns()
	want := []string{"cispo", "cross_entropy", "dro", "importance_sampling", "ppo"}
	if !slices.Equal(names, want) {
		t.Fatalf("LossFns() = %v, want %v", names, want)
	}
	for _, n := range names {
		needs, ok := lossFnNeeds(n)
		if !ok || len(needs) == 0 {
			t.Errorf("%s: needs %v, known %v", n, needs, ok)
		}
		for _, in := range needs {
			if _, ok := lossInputDType(in); !ok {
				t.Errorf("%s needs %s, which has no fixed type", n, in)
			}
		}
	}
	if _, ok := lossFnNeeds("mse"); ok {
		t.Error("an unknown loss function was accepted")
	}
}

// The platform headers keep the SDK's names, one each.
func TestPlatformHeaders(t *testing.T) {
	seen := map[string]bool{}
	for _, kv := range platformHeaders() {
		if kv[1] == "" || seen[kv[0]] {
			t.Errorf("header %q: value %q, repeated %v", kv[0], kv[1], seen[kv[0]])
		}
		seen[kv[0]] = true
	}
	if !seen["X-Stainless-OS"] || !seen["X-Stainless-Runtime-Version"] {
		t.Errorf("missing headers: %v", seen)
	}
}
