package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkGEMMLanesAVX2 compares the lane-form product (fwdLanes) with
// the dot-form tiles on the 0.6B layer shapes, a 16384-row slice of the
// lm_head (151936 × 1024) and rank-32 LoRA A and B shapes, all cores, in rounds that alternate the
// two in one process so that load from other processes falls on both
// alike. It logs each one's median wall and CPU GFLOP/s with their range
// and the median of the rounds' paired ratios (lanes ÷ dot form).
// LANES_M lists the batches (default 128,512), LANES_ROUNDS the rounds
// (7), LANES_DTYPE=bf16 bfloat16 weights (default float32, the training
// step's), LANES_SHAPES a comma list of shape names, LANES_BLOCK and
// LANES_PIECE fwdLanesBlock and fwdLanesPiece for the lanes' rounds;
// LANES_AB=prefetch (store) compares the lanes with and without
// fwdLanesPrefetch (fwdLanesStore) instead of with the dot form, and
// LANES_AB=planes the lanes without and with fwdLanesPlanes
// (LANES_PLANE_GROUPS: fwdLanesPlaneGroups), LANES_AB=shared the lanes
// as they ran before without and with fwdLanesPlanesShared and
// fwdLanesPlanePrefetch,
// LANES_AB=planeprefetch the shared planes without and with
// fwdLanesPlanePrefetch.
func BenchmarkGEMMLanesAVX2(b *testing.B) {
	ms, rounds := lanesBenchEnv(b, []int{128, 512})
	bf := os.Getenv("LANES_DTYPE") == "bf16"
	only := os.Getenv("LANES_SHAPES")
	ab := os.Getenv("LANES_AB")
	defer func(on bool, g int) { fwdLanesPlanes, fwdLanesPlaneGroups = on, g }(fwdLanesPlanes, fwdLanesPlaneGroups)
	if s := os.Getenv("LANES_PLANE_GROUPS"); s != "" {
		fwdLanesPlaneGroups, _ = strconv.Atoi(s)
	}
	defer func(on bool) { fwdLanesPlanesShared = on }(fwdLanesPlanesShared)
	defer func(on bool) { fwdLanesPlanePrefetch = on }(fwdLanesPlanePrefetch)
	if ab != "shared" && ab != "planeprefetch" {
		fwdLanesPlanesShared = false
	}
	if ab != "planes" && ab != "shared" && ab != "planeprefetch" {
		fwdLanesPlanes = false // the lanes' rounds: the tiles over whole panels
	}
	defer func(p, s bool, m int) {
		fwdLanesPrefetch, fwdLanesStore, fwdLanesMinTokens = p, s, m
	}(fwdLanesPrefetch, fwdLanesStore, fwdLanesMinTokens)
	fwdLanesMinTokens = 4 // the lanes run at every M they are given
	block, piece := fwdLanesBlock, fwdLanesPiece
	if s := os.Getenv("LANES_BLOCK"); s != "" {
		block, _ = strconv.Atoi(s)
	}
	if s := os.Getenv("LANES_PIECE"); s != "" {
		piece, _ = strconv.Atoi(s)
	}
	shapes := []struct {
		name       string
		rows, cols int
	}{{"q_proj", 2048, 1024}, {"kv_proj", 1024, 1024}, {"o_proj", 1024, 2048}, {"gate_up", 3072, 1024}, {"down", 1024, 3072}, {"head16k", 16384, 1024}, {"head64k", 65536, 1024},
		{"lora_a", 32, 1024}, {"lora_b", 1024, 32}, {"lora_b3", 3072, 32}}
	for _, sh := range shapes {
		if only != "" && !slices.Contains(strings.Split(only, ","), sh.name) {
			continue
		}
		for _, m := range ms {
			w, wb, xs := fwdCase(sh.rows, sh.cols, m, 2)
			mm := w
			if bf {
				mm = wb
			}
			ys := rowsOf(make([]float32, m*sh.rows), m, sh.rows)
			flop := 2 * float64(sh.rows*sh.cols*m)
			b.Run(fmt.Sprintf("%s-%dx%d/bf16=%v/M=%d", sh.name, sh.rows, sh.cols, bf, m), func(b *testing.B) {
				defer func(on bool, b, p int) { fwdLanes, fwdLanesBlock, fwdLanesPiece = on, b, p }(fwdLanes, fwdLanesBlock, fwdLanesPiece)
				fwdLanesBlock, fwdLanesPiece = block, piece
				var wall, cpu [2][]float64
				var rw, rc []float64
				withAVX2Bench(b, func() {
					for b.Loop() {
						for range rounds {
							for i, on := range []bool{false, true} {
								switch ab {
								case "prefetch":
									fwdLanes, fwdLanesPrefetch = true, on
								case "store":
									fwdLanes, fwdLanesStore = true, on
								case "planes":
									fwdLanes, fwdLanesPlanes = true, on
								case "shared":
									fwdLanes, fwdLanesPlanesShared, fwdLanesPlanePrefetch = true, on, on
								case "planeprefetch":
									fwdLanes, fwdLanesPlanesShared, fwdLanesPlanePrefetch = true, true, on
								default:
									fwdLanes = on
								}
								w, c := gemmRound(func() { matMul(mm, xs, ys, false) }, flop, 2, 150*time.Millisecond)
								wall[i], cpu[i] = append(wall[i], w), append(cpu[i], c)
							}
							k := len(wall[1]) - 1
							rw = append(rw, wall[1][k]/wall[0][k])
							rc = append(rc, cpu[1][k]/cpu[0][k])
						}
					}
				})
				reportGEMMPairs(b, [2]string{"dot  ", "lanes"}, "lanes/dot", wall, cpu, rw, rc)
			})
		}
	}
}

// BenchmarkTrainStepLanes alternates training steps of BenchmarkTrainStep's
// qwen3-wide4 2×512 shape (LANES_STEP=1x2048: 1×2048; LANES_STEP=0.6b:
// the 28-layer 0.6B shape at 2×512) with fwdLanes off
// and on in one process (the order swapped each pair) and reports the paired off/on ratios of CPU and
// wall time: on a machine shared with other jobs, separate binaries' step
// times differ by the load of the moment more than by the change.
// LANES_STEP_SWITCH=planes keeps the lanes on and flips fwdLanesPlanes,
// LANES_STEP_SWITCH=shared fwdLanesPlanesShared and fwdLanesPlanePrefetch
// together, LANES_STEP_SWITCH=fold fwdLanesFold, LANES_STEP_SWITCH=align24
// fwdLanesAlign24, LANES_STEP_SWITCH=outprefetch fwdLanesOutPrefetch,
// LANES_STEP_SWITCH=fwdtree those three together.
func BenchmarkTrainStepLanes(b *testing.B) {
	if !fwdAVX2 {
		b.Skip("the AVX2 forward kernels are not selected on this CPU")
	}
	name, lens, layers := "qwen3-wide4-2x512", []int{512, 512}, 4
	switch os.Getenv("LANES_STEP") {
	case "1x2048":
		name, lens = "qwen3-wide4-1x2048", []int{2048}
	case "0.6b":
		name, layers = "qwen3-0.6b-shape-2x512", 28
	}
	m := benchStepModel(b, name, layers)
	tr := mustTrainer(b, m, LoRAConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1})
	loss, _ := NewLoss(LossCrossEntropy, nil)
	data := forLoss(testData(min(m.cfg.VocabSize, 256), 3, lens...), LossCrossEntropy)
	step := func() {
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			b.Fatal(err)
		}
		if _, err := tr.OptimStep(DefaultAdamParams()); err != nil {
			b.Fatal(err)
		}
	}
	defer func(on, planes bool) { fwdLanes, fwdLanesPlanes = on, planes }(fwdLanes, fwdLanesPlanes)
	// LANES_STEP_SWITCH=planes: the lanes on throughout, fwdLanesPlanes
	// off and on.
	flip := func(on bool) { fwdLanes = on }
	switch os.Getenv("LANES_STEP_SWITCH") {
	case "planes":
		fwdLanes = true
		flip = func(on bool) { fwdLanesPlanes = on }
	case "fold":
		defer func(on bool) { fwdLanesFold = on }(fwdLanesFold)
		fwdLanes = true
		flip = func(on bool) { fwdLanesFold = on }
	case "align24":
		defer func(on bool) { fwdLanesAlign24 = on }(fwdLanesAlign24)
		fwdLanes = true
		flip = func(on bool) { fwdLanesAlign24 = on }
	case "outprefetch":
		defer func(on bool) { fwdLanesOutPrefetch = on }(fwdLanesOutPrefetch)
		fwdLanes = true
		flip = func(on bool) { fwdLanesOutPrefetch = on }
	case "fwdtree":
		defer func(f, a, pf bool) { fwdLanesFold, fwdLanesAlign24, fwdLanesOutPrefetch = f, a, pf }(fwdLanesFold, fwdLanesAlign24, fwdLanesOutPrefetch)
		fwdLanes = true
		flip = func(on bool) { fwdLanesFold, fwdLanesAlign24, fwdLanesOutPrefetch = on, on, on }
	case "shared":
		defer func(on bool) { fwdLanesPlanesShared = on }(fwdLanesPlanesShared)
		fwdLanes = true
		defer func(on bool) { fwdLanesPlanePrefetch = on }(fwdLanesPlanePrefetch)
		flip = func(on bool) { fwdLanesPlanesShared, fwdLanesPlanePrefetch = on, on }
	}
	step() // sizes the scratch arena
	var rc, rw []float64
	pair := 0
	for b.Loop() {
		var cpu, wall [2]float64 // [off, on]
		order := []int{0, 1}
		if pair%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			flip(i == 1)
			c0, t0 := processCPU(), time.Now()
			step()
			cpu[i], wall[i] = processCPU()-c0, time.Since(t0).Seconds()
		}
		pair++
		rc, rw = append(rc, cpu[0]/cpu[1]), append(rw, wall[0]/wall[1])
		b.Logf("off %.1f s %.2f cpu-s, on %.1f s %.2f cpu-s: %.3f cpu, %.3f wall", wall[0], cpu[0], wall[1], cpu[1], cpu[0]/cpu[1], wall[0]/wall[1])
	}
	slices.Sort(rc)
	slices.Sort(rw)
	b.ReportMetric(rc[len(rc)/2], "x-cpu")
	b.ReportMetric(rw[len(rw)/2], "x-wall")
}

// BenchmarkGEMMLanesFoldAB runs a LoRA layer's product, W·x and then B·t
// added (matMulFoldOn on a batch packed each call, as trainLinear packs
// it), with fwdLanesFold off and on in alternating rounds in one process,
// on all cores: the 0.6B / wide4 layer shapes and a 65536-row slice of the
// lm_head (whose logits, 128 MiB at M = 512, leave L3), rank 32. It logs
// each side's median GFLOP per second and per CPU-second (W's and B's
// FLOPs) and the median of the rounds' paired ratios (on ÷ off). LANES_M
// lists the batches (default 512), LANES_ROUNDS the rounds (7),
// LANES_SHAPES a comma list of shape names; LANES_AB=align24 keeps the
// fold as it is and flips fwdLanesAlign24 instead, LANES_AB=groups
// fwdLanesPlaneGroups from its value to LANES_PLANE_GROUPS,
// LANES_AB=outprefetch fwdLanesOutPrefetch, LANES_AB=fwdtree the fold,
// fwdLanesAlign24 and fwdLanesOutPrefetch together. The outputs are
// advised onto huge pages (adviseHuge), as the step's arena holds the
// logits; LANES_AB=huge compares outputs without that advice (off) and
// with it (on).
func BenchmarkGEMMLanesFoldAB(b *testing.B) {
	ms, rounds := lanesBenchEnv(b, []int{512})
	only := os.Getenv("LANES_SHAPES")
	ab := os.Getenv("LANES_AB")
	defer func(on, fold, a bool) { fwdLanes, fwdLanesFold, fwdLanesAlign24 = on, fold, a }(fwdLanes, fwdLanesFold, fwdLanesAlign24)
	fwdLanes = true
	defer func(g int, pf, a bool) {
		fwdLanesPlaneGroups, fwdLanesOutPrefetch, fwdLanesAlign24 = g, pf, a
	}(fwdLanesPlaneGroups, fwdLanesOutPrefetch, fwdLanesAlign24)
	groups := [2]int{fwdLanesPlaneGroups, fwdLanesPlaneGroups}
	if s := os.Getenv("LANES_PLANE_GROUPS"); s != "" {
		groups[1], _ = strconv.Atoi(s)
	}
	shapes := []struct {
		name       string
		rows, cols int
	}{{"q_proj", 2048, 1024}, {"kv_proj", 1024, 1024}, {"o_proj", 1024, 2048}, {"gate_up", 3072, 1024}, {"down", 1024, 3072}, {"head64k", 65536, 1024}}
	const rank = 32
	for _, sh := range shapes {
		if only != "" && !slices.Contains(strings.Split(only, ","), sh.name) {
			continue
		}
		for _, m := range ms {
			w, _, xs := fwdCase(sh.rows, sh.cols, m, 2)
			bm, _, ts := fwdCase(sh.rows, rank, m, 3)
			ys := rowsOf(make([]float32, m*sh.rows), m, sh.rows)
			yh := make([]float32, m*sh.rows)
			adviseHuge(yh)
			ysh := rowsOf(yh, m, sh.rows)
			flop := 2 * float64(sh.rows*(sh.cols+rank)*m)
			b.Run(fmt.Sprintf("%s-%dx%d/M=%d", sh.name, sh.rows, sh.cols, m), func(b *testing.B) {
				var wall, cpu [2][]float64
				var rw, rc []float64
				withAVX2Bench(b, func() {
					for b.Loop() {
						for r := range rounds {
							order := []int{0, 1}
							if r%2 == 1 {
								order = []int{1, 0}
							}
							for _, i := range order {
								y := ysh
								switch ab {
								case "align24":
									fwdLanesAlign24 = i == 1
								case "groups":
									fwdLanesPlaneGroups = groups[i]
								case "outprefetch":
									fwdLanesOutPrefetch = i == 1
								case "fwdtree":
									fwdLanesFold, fwdLanesAlign24, fwdLanesOutPrefetch = i == 1, i == 1, i == 1
								case "huge":
									if i == 0 {
										y = ys
									}
								default:
									fwdLanesFold = i == 1
								}
								w, c := gemmRound(func() {
									p, ok := packForward(w, xs)
									if !ok {
										b.Fatal("the batch was not packed")
									}
									matMulFoldOn(p, w, xs, y, bm, ts, false)
									p.release()
								}, flop, 2, 150*time.Millisecond)
								wall[i], cpu[i] = append(wall[i], w), append(cpu[i], c)
							}
							k := len(wall[1]) - 1
							rw = append(rw, wall[1][k]/wall[0][k])
							rc = append(rc, cpu[1][k]/cpu[0][k])
						}
					}
				})
				reportGEMMPairs(b, [2]string{"off", "on "}, "on/off", wall, cpu, rw, rc)
			})
		}
	}
}

// reportGEMMPairs logs each side's median and range of GFLOP per second
// and per CPU-second and reports the paired ratios' medians (rw, rc:
// side 1 ÷ side 0 round by round).
func reportGEMMPairs(b *testing.B, names [2]string, label string, wall, cpu [2][]float64, rw, rc []float64) {
	for i, name := range names {
		slices.Sort(wall[i])
		slices.Sort(cpu[i])
		k := len(wall[i])
		b.Logf("%s: wall %.1f [%.1f-%.1f] GFLOP/s  cpu %.1f [%.1f-%.1f] GFLOP/CPU-s",
			name, wall[i][k/2], wall[i][0], wall[i][k-1], cpu[i][k/2], cpu[i][0], cpu[i][k-1])
	}
	slices.Sort(rw)
	slices.Sort(rc)
	k := len(rw)
	b.Logf("%s paired: wall %.3f [%.3f-%.3f]  cpu %.3f [%.3f-%.3f]", label, rw[k/2], rw[0], rw[k-1], rc[k/2], rc[0], rc[k-1])
	b.ReportMetric(rw[k/2], "x-wall")
	b.ReportMetric(rc[k/2], "x-cpu")
}

// lanesBenchEnv is the lane GEMM benchmarks' batches (LANES_M, a comma
// list; ms when unset) and rounds (LANES_ROUNDS; 7 when unset).
func lanesBenchEnv(b *testing.B, ms []int) ([]int, int) {
	if s := os.Getenv("LANES_M"); s != "" {
		ms = nil
		for _, f := range strings.Split(s, ",") {
			m, err := strconv.Atoi(f)
			if err != nil || m < 1 {
				b.Fatalf("LANES_M %q: want positive batches", s)
			}
			ms = append(ms, m)
		}
	}
	rounds := 7
	if s := os.Getenv("LANES_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	return ms, rounds
}
