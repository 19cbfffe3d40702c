//go:build goexperiment.simd && amd64

package engine

import (
	"context"
	"os"
	"testing"
	"time"
)

// BenchmarkTrainStepExpAVX2 runs the wide4 2×512 training step (rank-32
// LoRA on every target) with the loss's AVX2 exponentials (exp4Chains and
// expAVX2) off and on, alternating step by step in one process (the
// order swapping every round), b.N rounds, and logs each side's wall and
// CPU seconds per step and the medians of the rounds' off/on ratios: an
// A/B that a machine shared with other benchmarks disturbs less than two
// binaries run minutes apart. HEAD_SWITCH=chunk instead compares the
// output layer's chunk at headBytes' default and at twice it (one chunk
// of 1024 positions instead of two of 512).
func BenchmarkTrainStepExpAVX2(b *testing.B) {
	defer func(c, a bool, hb int) { exp4Chains, expAVX2, headBytes = c, a, hb }(exp4Chains, expAVX2, headBytes)
	asm := expAVX2
	set := func(on bool) { exp4Chains, expAVX2 = on, on && asm }
	hb := headBytes
	if os.Getenv("HEAD_SWITCH") == "chunk" {
		set = func(on bool) {
			headBytes = hb
			if on {
				headBytes = 2 * hb
			}
		}
	}
	stepSwitchPairs(b, set)
}

// stepSwitchPairs runs the qwen3-wide4 2×512 training step (rank-32 LoRA
// on every target) with set(false) and set(true), alternating step by
// step in one process (the order swapping every round), b.N rounds, and
// logs each side's wall and CPU seconds per step and reports the medians
// of the rounds' off/on ratios (above 1: on is faster).
func stepSwitchPairs(b *testing.B, set func(on bool)) {
	m := benchStepModel(b, "qwen3-wide4-2x512", 4)
	tr := mustTrainer(b, m, LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(256, 3, 512, 512), LossCrossEntropy)
	step := func() {
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.OptimStep(DefaultAdamParams()); err != nil {
			b.Fatal(err)
		}
	}
	for _, on := range []bool{false, true} { // sizes the arena for both
		set(on)
		step()
	}
	var wall, cpu [2][]float64
	round := 0
	for b.Loop() {
		for j := range 2 {
			i := (j + round) % 2
			set(i == 1)
			c0, t0 := processCPU(), time.Now()
			step()
			wall[i] = append(wall[i], time.Since(t0).Seconds())
			cpu[i] = append(cpu[i], processCPU()-c0)
		}
		round++
	}
	for i, name := range []string{"off", "on"} {
		b.Logf("%s: wall %.3v cpu %.3v", name, wall[i], cpu[i])
	}
	b.ReportMetric(medianRatio(wall[0], wall[1]), "x-wall-off/on")
	b.ReportMetric(medianRatio(cpu[0], cpu[1]), "x-cpu-off/on")
	b.ReportMetric(median(cpu[1]), "cpu-s/step-on")
}
