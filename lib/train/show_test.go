package train

import "testing"

// A loss that rounds to zero from below reads 0.0000, never -0.0000
// (issue 29, item 15: RL loss columns).
func TestCellNeverNegativeZero(t *testing.T) {
	for _, x := range []float64{-0.00001, -0.00004999, 0} {
		if got := cell("loss", x); got != "0.0000" {
			t.Errorf("cell(loss, %g) = %q", x, got)
		}
	}
	if got := cell("loss", -0.00005001); got != "-0.0001" {
		t.Errorf("cell(loss, -0.00005001) = %q", got)
	}
}
