package train

import (
	"math"
	"testing"
	"time"
)

// The step line names the loop's headline figure and projects the time
// left from the mean time per step so far.
func TestStepLine(t *testing.T) {
	m := SFTMetrics{Step: 2, Loss: 1.23456, Tokens: 300, Seconds: 1.5}
	got := stepLine(m, 10, 0, 20*time.Second)
	if want := "step 2/10  loss 1.2346  200 tok/s  ETA 1m20s"; got != want {
		t.Errorf("stepLine = %q, want %q", got, want)
	}
}

// A run resumed after step 500 of 1000 that took 10 s for its first two
// steps has 498 steps left at 5 s each, not (10 s / 502 steps) per step.
func TestStepLineAfterResume(t *testing.T) {
	m := SFTMetrics{Step: 502, Loss: 0.5, Tokens: 100, Seconds: 5}
	got := stepLine(m, 1000, 500, 10*time.Second)
	if want := "step 502/1000  loss 0.5000  20 tok/s  ETA 41m30s"; got != want {
		t.Errorf("stepLine = %q, want %q", got, want)
	}
}

// With two steps in flight, results often arrive in pairs. A step's time
// is its share of the wall time since the result pipelineDepth steps back,
// so pairs arriving every 0.3 s give steady 0.15 s steps, where the time
// since the previous result alternated 0.3 s and 0 s (absurd tokens/s).
func TestLapSharesPipelinedTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := &runner[SFTMetrics]{resultsAt: []time.Time{t0}}
	arrivals := []float64{0.3, 0.3, 0.6, 0.6, 0.9, 0.9, 1.2, 1.2}
	var laps []float64
	for _, a := range arrivals {
		laps = append(laps, r.lapAt(t0.Add(time.Duration(a*float64(time.Second)))))
	}
	for i, l := range laps[1:] {
		if math.Abs(l-0.15) > 1e-9 {
			t.Errorf("step %d took %.3f s, want 0.15 (laps %v)", i+2, l, laps)
		}
	}
	if math.Abs(laps[0]-0.3) > 1e-9 {
		t.Errorf("first step took %.3f s, want 0.3", laps[0])
	}
}
