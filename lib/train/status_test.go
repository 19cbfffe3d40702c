package train

import (
	"testing"
	"time"
)

// The step line names the loop's headline figure and projects the time
// left from the mean time per step so far.
func TestStepLine(t *testing.T) {
	m := SFTMetrics{Step: 2, Loss: 1.23456, Tokens: 300, Seconds: 1.5}
	got := stepLine(m, 10, 20*time.Second)
	if want := "step 2/10  loss 1.2346  200 tok/s  ETA 1m20s"; got != want {
		t.Errorf("stepLine = %q, want %q", got, want)
	}
}
