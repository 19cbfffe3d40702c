package engine

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkHeadChunk runs the same training step (forward_backward and
// optim_step, rank-32 LoRA on every target) on the 0.6B widths with each
// output-layer chunk in turn, interleaved step by step (the order rotates
// every round), and reports the median over rounds of each chunk's wall and
// CPU seconds per step divided by the first chunk's in the same round: an A/B in one process, which a loaded
// machine disturbs far less than two runs minutes apart. b.N is the number
// of rounds. HEAD_CHUNKS lists the chunks (default 128,256,512).
func BenchmarkHeadChunk(b *testing.B) {
	chunks := []int{128, 256, 512}
	if s := os.Getenv("HEAD_CHUNKS"); s != "" {
		chunks = chunks[:0]
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			chunks = append(chunks, n)
		}
	}
	cases := []struct {
		name           string
		seqs, n, layer int
	}{{"0.6b-widths-1layer-2x512", 2, 512, 1}, {"qwen3-0.6b-shape-2x512", 2, 512, 28},
		{"qwen3-wide4-1x2048", 1, 2048, 4}, {"qwen3-0.6b-shape-2x128", 2, 128, 28},
		{"0.6b-widths-1layer-2x128", 2, 128, 1}}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			defer func(rows, bytes int) { headChunk, headBytes = rows, bytes }(headChunk, headBytes)
			headBytes = 0 // the chunk is headChunk
			m := benchStepModel(b, tc.name, tc.layer)
			tr := mustTrainer(b, m, LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
			loss, _ := NewLoss(LossCrossEntropy, nil)
			data := forLoss(testData(256, 3, slices.Repeat([]int{tc.n}, tc.seqs)...), LossCrossEntropy)
			step := func() {
				if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
					b.Fatal(err)
				}
				if _, err := tr.OptimStep(DefaultAdamParams()); err != nil {
					b.Fatal(err)
				}
			}
			for _, c := range chunks { // sizes the arena for every chunk
				headChunk = c
				step()
			}
			wall, cpu := make([][]float64, len(chunks)), make([][]float64, len(chunks))
			round := 0
			for b.Loop() {
				for j := range chunks {
					i := (j + round) % len(chunks)
					headChunk = chunks[i]
					c0, t0 := processCPU(), time.Now()
					step()
					wall[i] = append(wall[i], time.Since(t0).Seconds())
					cpu[i] = append(cpu[i], processCPU()-c0)
				}
				round++
			}
			for i, c := range chunks {
				b.Logf("chunk %d: wall %.3v cpu %.3v", c, wall[i], cpu[i])
				b.ReportMetric(medianRatio(wall[i], wall[0]), "x-wall-"+strconv.Itoa(c))
				b.ReportMetric(medianRatio(cpu[i], cpu[0]), "x-cpu-"+strconv.Itoa(c))
			}
			b.ReportMetric(median(cpu[0]), "cpu-s/step-"+strconv.Itoa(chunks[0]))
		})
	}
}

// medianRatio is the median of a[i]/b[i].
func medianRatio(a, b []float64) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i] / b[i]
	}
	return median(r)
}
