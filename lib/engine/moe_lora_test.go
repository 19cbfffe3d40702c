package engine

import "testing"

// TestExpertKind: the stacked expert tensors name the gate (w1), up (w3)
// and down (w2) matrices; nothing else is a stacked expert tensor.
func TestExpertKind(t *testing.T) {
	for mod, want := range map[string]int{"experts.w1": 0, "experts.w3": 1, "experts.w2": 2} {
		if got, ok := expertKind(mod); !ok || got != want {
			t.Errorf("expertKind(%q) = %d, %v; want %d, true", mod, got, ok, want)
		}
	}
	for _, mod := range []string{"experts.w4", "experts.0.gate_proj", "w1", ""} {
		if _, ok := expertKind(mod); ok {
			t.Errorf("expertKind(%q) is a stacked expert tensor", mod)
		}
	}
}
