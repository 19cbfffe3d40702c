package engine

import (
	"math"
	"testing"
)

// TestPoisonScratchEnv: TINKER_POISON_SCRATCH, read when a trainer is
// made, decides whether every arena of the trainer (its own and the
// extra datum slots') hands out takeToFill memory full of NaN; unset or
// "0" leaves it unpoisoned.
func TestPoisonScratchEnv(t *testing.T) {
	m := mustLoad(t, TinyModels()[0])
	cfg := LoRAConfig{Rank: 2, TrainMLP: true, Seed: 1}
	for _, c := range []struct {
		val  string
		want bool
	}{{"", false}, {"0", false}, {"1", true}, {"yes", true}} {
		t.Setenv(poisonScratchEnv, c.val)
		tr := mustTrainer(t, m, cfg)
		t.Setenv(poisonScratchEnv, "") // read when made: later changes do not matter
		for i, s := range tr.slotsFor(2, 64) {
			s.ar.reset()
			for _, take := range [][]float32{s.ar.takeToFill(16), s.ar.takeToFill(1 << 10)} { // in the buffer, then past it
				for _, x := range take {
					if math.IsNaN(float64(x)) != c.want {
						t.Fatalf("%s=%q: slot %d's arena hands out %v, want NaN %v", poisonScratchEnv, c.val, i, x, c.want)
					}
				}
			}
		}
	}
}
