package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// memShape is one training step whose memory BenchmarkTrainMemory
// measures: seqs sequences of n tokens on the Qwen3-0.6B widths with
// layers layers; torch says whether PyTorch runs it too (it keeps every
// layer's T×T attention probabilities: the 0.6B shape at 2048 tokens
// takes more than a shared 24 GB machine has).
type memShape struct {
	name            string
	layers, seqs, n int
	torch           bool
}

var memShapes = []memShape{
	{name: "wide4-2x512", layers: 4, seqs: 2, n: 512, torch: true},
	{name: "wide4-1x2048", layers: 4, seqs: 1, n: 2048, torch: true},
	{name: "0.6b-2x512", layers: 28, seqs: 2, n: 512, torch: true},
	{name: "0.6b-1x2048", layers: 28, seqs: 1, n: 2048},
	{name: "0.6b-1x4096", layers: 28, seqs: 1, n: 4096},
}

// memChildEnv carries the shape a child process of BenchmarkTrainMemory
// runs (layers,seqs,n).
const memChildEnv = "TINKER_TRAIN_MEMORY_CHILD"

// BenchmarkTrainMemory reports, per shape, the peak resident set of one
// training step (forward_backward, rank-32 LoRA on every linear layer and
// the output layer, then optim_step) on a random Qwen3-0.6B-shaped model
// (float32 weights) in the engine and, when TINKER_BENCH_TORCH names a
// Python with torch, in PyTorch (testdata/torch_train_step.py, the same
// model and LoRA placement, one untimed step), with PyTorch ÷ engine.
// Each side runs in a child process of its own (this test binary again,
// or Python) and its peak is the maxrss that wait4 returns for it, so
// nothing else the benchmark does counts; CPU load does not disturb it
// while a step makes little heap garbage (a slower step gets more of the
// runtime's two-minute collections: TestTrainStepGarbageFlatInLayers).
// Linux starts a child's maxrss from its parent's at the exec (Go's fork
// shares the parent's memory until then), so the parent stays small and
// reports its own peak as both sides' floor (parent-RSS-MiB).
// The engine's child also reports its weights, trainer state, activation
// estimate (ActivationBytes) and arena peak.
func BenchmarkTrainMemory(b *testing.B) {
	if spec := os.Getenv(memChildEnv); spec != "" {
		trainMemoryChild(b, spec)
		return
	}
	py := os.Getenv("TINKER_BENCH_TORCH")
	for _, s := range memShapes {
		b.Run(s.name, func(b *testing.B) {
			var eng childMemory
			for b.Loop() {
				eng = engineStepMemory(b, s)
			}
			const mb = 1 << 20
			b.ReportMetric(float64(eng.peak)/mb, "peak-RSS-MiB")
			b.ReportMetric(float64(selfMaxRSS())/mb, "parent-RSS-MiB")
			for _, k := range []string{"weights", "state", "activations", "arena-peak"} {
				b.ReportMetric(float64(eng.parts[k])/mb, k+"-MiB")
			}
			if py == "" || !s.torch {
				return
			}
			torch := torchStepMemory(b, py, s)
			if torch == 0 {
				return
			}
			b.ReportMetric(float64(torch)/mb, "peak-RSS-MiB-pytorch")
			b.ReportMetric(float64(torch)/float64(eng.peak), "x-pytorch")
		})
	}
}

// childMemory is what an engine child measured: its peak RSS (bytes, from
// wait4) and the sizes it reported.
type childMemory struct {
	peak  int64
	parts map[string]int64
}

// engineStepMemory runs shape s in a child process of this test binary.
func engineStepMemory(b *testing.B, s memShape) childMemory {
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^BenchmarkTrainMemory$", "-test.benchtime=1x")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%d", memChildEnv, s.layers, s.seqs, s.n))
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("engine child %s: %v\n%s", s.name, err, out)
	}
	m := childMemory{peak: maxRSS(cmd.ProcessState)}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, "train-memory "); ok {
			if err := json.Unmarshal([]byte(rest), &m.parts); err != nil {
				b.Fatalf("engine child %s: %v", s.name, err)
			}
		}
	}
	if m.parts == nil {
		b.Fatalf("engine child %s reported no sizes:\n%s", s.name, out)
	}
	return m
}

// torchStepMemory runs shape s in PyTorch and returns its peak RSS, or 0
// when a signal killed it (the kernel's out-of-memory killer on a shared
// machine: PyTorch takes 13 GB or more at 0.6B 2 × 512), which the log
// says; the engine's figures stand.
func torchStepMemory(b *testing.B, py string, s memShape) int64 {
	c := qwen3Small()
	c.Layers = s.layers
	cmd := exec.Command(py, "testdata/torch_train_step.py", torchConfig(c), strconv.Itoa(s.seqs), strconv.Itoa(s.n),
		"0", strconv.Itoa(runtime.GOMAXPROCS(0)))
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState != nil && cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
		b.Logf("PyTorch step %s: %v after %d MiB (out of memory?): no PyTorch figure", s.name, err, maxRSS(cmd.ProcessState)>>20)
		return 0
	}
	if err != nil {
		b.Fatalf("PyTorch step %s: %v\n%s", s.name, err, out)
	}
	return maxRSS(cmd.ProcessState)
}

// maxRSS is a finished child's peak resident set in bytes (Linux reports
// KiB).
func maxRSS(ps *os.ProcessState) int64 {
	return ps.SysUsage().(*syscall.Rusage).Maxrss * 1024
}

// selfMaxRSS is this process's peak resident set in bytes.
func selfMaxRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss * 1024
}

// trainMemoryChild runs one step of the shape spec names and prints its
// sizes for the parent.
func trainMemoryChild(b *testing.B, spec string) {
	var layers, seqs, n int
	if _, err := fmt.Sscanf(spec, "%d,%d,%d", &layers, &seqs, &n); err != nil {
		b.Fatalf("%s=%q: %v", memChildEnv, spec, err)
	}
	c := qwen3Small()
	c.Layers = layers
	ts := randomTensors(c, 1)
	var weights int64
	for _, t := range ts {
		weights += 4 * int64(len(t.Data))
	}
	m, err := New("qwen3-0.6b-shape", c, ts)
	if err != nil {
		b.Fatal(err)
	}
	tr := mustTrainer(b, m, LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
	loss, _ := NewLoss(LossCrossEntropy, nil)
	lens := slices.Repeat([]int{n}, seqs)
	data := forLoss(testData(min(c.VocabSize, 256), 3, lens...), LossCrossEntropy)
	for b.Loop() {
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.OptimStep(DefaultAdamParams()); err != nil {
			b.Fatal(err)
		}
	}
	parts, _ := json.Marshal(map[string]int64{"weights": weights, "state": tr.StateBytes(),
		"activations": tr.ActivationBytes(lens, true), "arena-peak": 4 * int64(tr.ar.peak)})
	fmt.Printf("train-memory %s\n", parts)
}
