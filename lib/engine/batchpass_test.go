package engine

import (
	"context"
	"reflect"
	"runtime"
	"slices"
	"testing"
)

// TestBatchedDatumsKeepBits runs two datums of different lengths (and
// three) through each layer together, on one core and on two under a
// call limit that leaves no room for datum slots, and requires the
// outputs, loss and accumulated gradients of running each datum in a call
// of its own, bit for bit, after a second call too (per-datum commits
// leave nothing behind). A row given another datum's position, cache,
// targets or gradient segment changes them.
func TestBatchedDatumsKeepBits(t *testing.T) {
	loss, _ := NewLoss(LossCrossEntropy, nil)
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 3}
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		if !mustTrainer(t, m, cfg).batches() {
			continue // experts run one datum a pass
		}
		for _, lens := range [][]int{{33, 17}, {9, 40, 21}} {
			data := forLoss(testData(m.cfg.VocabSize, 7, lens...), LossCrossEntropy)
			want, wantGrads := separateCalls(t, m, cfg, loss, data)
			for _, procs := range []int{1, 2} {
				got, gotGrads := batchedCall(t, m, cfg, loss, data, procs, nil, []int{len(lens)})
				if !reflect.DeepEqual(want, got) {
					t.Fatalf("%s %v, %d cores: batched outputs or loss differ from one call per datum", name, lens, procs)
				}
				for i := range wantGrads {
					if !slices.Equal(wantGrads[i], gotGrads[i]) {
						t.Fatalf("%s %v, %d cores: batched gradient of tensor %d differs from one call per datum", name, lens, procs, i)
					}
				}
			}
		}
	}
}

// separateCalls runs data twice, each datum in a forward_backward call of
// its own, and returns the outputs (with the datums' loss sums added in
// datum order) and the accumulated gradients.
func separateCalls(t *testing.T, m *Model, cfg LoRAConfig, loss Loss, data []Datum) ([]*ForwardResult, [][]float32) {
	tr := mustTrainer(t, m, cfg)
	randomizeB(t, tr, 5, 0.05)
	var rs []*ForwardResult
	for range 2 {
		all := &ForwardResult{}
		for i := range data {
			r, err := tr.ForwardBackward(context.Background(), loss, data[i:i+1])
			if err != nil {
				t.Fatal(err)
			}
			all.Outputs = append(all.Outputs, r.Outputs...)
			all.LossSum += r.LossSum
		}
		rs = append(rs, all)
	}
	return rs, gradBits(tr)
}

// batchedCall runs data twice in one forward_backward call on procs cores,
// set up by setup, its datums in groups ending at ends (checked) within
// CallBytes.
func batchedCall(t *testing.T, m *Model, cfg LoRAConfig, loss Loss, data []Datum, procs int, setup func(*Trainer), ends []int) ([]*ForwardResult, [][]float32) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	tr := mustTrainer(t, m, cfg)
	randomizeB(t, tr, 5, 0.05)
	ls, sum := lengthsOf(data), 0
	for _, n := range ls {
		sum += n
	}
	if procs > 1 { // room for the batch, none for a second datum slot
		tr.SetCallLimit(tr.ActivationBytes([]int{sum}, true))
	}
	if setup != nil {
		setup(tr)
	}
	if slots, groups := tr.datumSlots(ls, true), tr.datumGroups(ls, true); slots != 1 || !slices.Equal(groups, ends) {
		t.Fatalf("%v on %d cores: %d datum slots, groups ending at %v; want %v", ls, procs, slots, groups, ends)
	}
	var rs []*ForwardResult
	for range 2 {
		r, err := tr.ForwardBackward(context.Background(), loss, data)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if used, budget := 4*int64(tr.ar.peak), tr.CallBytes(ls, true); used > budget || setup == nil && procs > 1 && budget > tr.callLimit.Load() {
		t.Fatalf("%v on %d cores: the batch took %d bytes of arena, CallBytes says %d", ls, procs, used, budget)
	}
	return rs, gradBits(tr)
}

// TestBatchFallsBackToOneByOne requires a group to stop growing where the
// keep limit (the batch would recompute), the call limit (the batch's
// ActivationBytes) or batchRows says so, the datums then running one by
// one with the same bits; a datum that recomputes runs alone beside a
// batch that keeps.
func TestBatchFallsBackToOneByOne(t *testing.T) {
	loss, _ := NewLoss(LossCrossEntropy, nil)
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 3}
	defer func(old int) { batchRows = old }(batchRows)
	rows := batchRows
	m := mustLoad(t, testModels(t)[0])
	tr := mustTrainer(t, m, cfg)
	perToken := 4 * int64(tr.layerSizes().kept())
	data := forLoss(testData(m.cfg.VocabSize, 9, 12, 20, 60, 30), LossCrossEntropy)
	want, wantGrads := separateCalls(t, m, cfg, loss, data)
	cases := []struct {
		name  string
		setup func(*Trainer)
		ends  []int
	}{
		{"keep limit of 40 tokens", func(tr *Trainer) { tr.SetKeepLimit(40 * perToken) }, []int{2, 3, 4}},
		{"keep limit 0", func(tr *Trainer) { tr.SetKeepLimit(0) }, []int{1, 2, 3, 4}},
		{"call limit of 50 tokens", func(tr *Trainer) { tr.SetCallLimit(tr.ActivationBytes([]int{50}, true)) }, []int{2, 3, 4}},
		{"call limit below the first pair", func(tr *Trainer) { tr.SetCallLimit(tr.ActivationBytes([]int{31}, true)) }, []int{1, 2, 3, 4}},
		{"batchRows 90", func(*Trainer) { batchRows = 90 }, []int{2, 4}},
	}
	for _, c := range cases {
		got, gotGrads := batchedCall(t, m, cfg, loss, data, 1, c.setup, c.ends)
		batchRows = rows // as the case found it
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%s: outputs or loss differ from one call per datum", c.name)
		}
		for i := range wantGrads {
			if !slices.Equal(wantGrads[i], gotGrads[i]) {
				t.Fatalf("%s: gradient of tensor %d differs from one call per datum", c.name, i)
			}
		}
	}
}

// TestBatchGroupsOnlyShortDatums pins where batching pays: datums of 512
// rows each run alone (2 × 512 as one group gained nothing and held both
// datums' activations, 5.6 GB against 4.3 at the 0.6B shape), shorter ones
// group up to 512 rows, and no group's arena passes a 512-row datum's.
func TestBatchGroupsOnlyShortDatums(t *testing.T) {
	m := mustLoad(t, testModels(t)[0])
	tr := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, Seed: 3})
	if !tr.batches() {
		t.Skipf("%s runs one datum a pass", testModels(t)[0])
	}
	one := tr.ActivationBytes([]int{512}, true)
	for _, c := range []struct {
		lengths []int
		ends    []int
	}{
		{[]int{512, 512}, []int{1, 2}},
		{slices.Repeat([]int{128}, 8), []int{4, 8}},
		{[]int{100, 500, 300, 200, 128, 40}, []int{1, 2, 4, 6}},
	} {
		if got := tr.datumGroups(c.lengths, true); !slices.Equal(got, c.ends) {
			t.Errorf("%v: groups end at %v, want %v", c.lengths, got, c.ends)
		}
		if got := tr.groupBytes(c.lengths, true); got > one {
			t.Errorf("%v: the largest group takes %d bytes of arena, one 512-token datum %d", c.lengths, got, one)
		}
	}
}

// TestHeadRunsShareChunks pins which of a group's datums share the output
// layer's products: consecutive datums while their rows fit the group's
// chunk (2 × 128 on Qwen3's vocabulary: one run, so the 622 MB output
// matrix streams once forward and once backward, not twice), a datum
// longer than the chunk alone.
func TestHeadRunsShareChunks(t *testing.T) {
	for _, c := range []struct {
		lengths    []int
		vocab      int
		runLengths [][]int
	}{
		{[]int{128, 128}, 151936, [][]int{{128, 128}}},
		{[]int{128, 128, 128, 128}, 151936, [][]int{{128, 128, 128, 128}}},
		{[]int{100, 200, 150}, 262144, [][]int{{100}, {200}, {150}}},
		{[]int{40, 60, 100, 300}, 262144, [][]int{{40, 60, 100}, {300}}},
	} {
		var segs []segment
		n := 0
		for i, l := range c.lengths {
			segs = append(segs, segment{d: i, off: n, n: l})
			n += l
		}
		var got [][]int
		for _, run := range headRuns(segs, headChunkRows(n, c.vocab)) {
			var ls []int
			for _, sg := range run {
				ls = append(ls, sg.n)
			}
			got = append(got, ls)
		}
		if !reflect.DeepEqual(got, c.runLengths) {
			t.Errorf("%v at vocabulary %d: head runs %v, want %v", c.lengths, c.vocab, got, c.runLengths)
		}
	}
}

// TestBatchedHeadRunsKeepBits runs a group of three datums whose output
// layer takes every split headRuns makes (all in one run, the first two
// together, each alone and the long one in chunks) and requires the bits
// of one call per datum: a row scored against another datum's targets, a
// head gradient summed over two datums' rows at once or committed out of
// order changes them.
func TestBatchedHeadRunsKeepBits(t *testing.T) {
	defer func(rows, bytes int) { headChunk, headBytes = rows, bytes }(headChunk, headBytes)
	loss, _ := NewLoss(LossCrossEntropy, nil)
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 3}
	m := mustLoad(t, testModels(t)[0])
	if !mustTrainer(t, m, cfg).batches() {
		t.Skipf("%s runs one datum a pass", testModels(t)[0])
	}
	data := forLoss(testData(m.cfg.VocabSize, 7, 9, 40, 21), LossCrossEntropy)
	want, wantGrads := separateCalls(t, m, cfg, loss, data)
	for _, chunk := range []int{0, 64, 16} { // 0: the default, the whole group
		headBytes, headChunk = 0, chunk
		if chunk == 0 {
			headBytes, headChunk = 320<<20, 128
		}
		got, gotGrads := batchedCall(t, m, cfg, loss, data, 1, nil, []int{3})
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("head chunk %d: batched outputs or loss differ from one call per datum", chunk)
		}
		if !reflect.DeepEqual(forwardOnly(t, m, cfg, loss, data, false), forwardOnly(t, m, cfg, loss, data, true)) {
			t.Fatalf("head chunk %d: a batched forward call's outputs or loss differ from one call per datum", chunk)
		}
		for i := range wantGrads {
			if !slices.Equal(wantGrads[i], gotGrads[i]) {
				t.Fatalf("head chunk %d: batched gradient of tensor %d differs from one call per datum", chunk, i)
			}
		}
	}
}

// forwardOnly runs data in forward calls on one core, all in one call
// (batched, its datums in one group) or one call per datum, and returns
// the outputs with the loss sums added in datum order.
func forwardOnly(t *testing.T, m *Model, cfg LoRAConfig, loss Loss, data []Datum, batched bool) *ForwardResult {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	tr := mustTrainer(t, m, cfg)
	randomizeB(t, tr, 5, 0.05)
	calls := [][]Datum{data}
	if !batched {
		calls = nil
		for i := range data {
			calls = append(calls, data[i:i+1])
		}
	} else if ends := tr.datumGroups(lengthsOf(data), false); len(ends) != 1 {
		t.Fatalf("forward call of %v: groups end at %v, want one group", lengthsOf(data), ends)
	}
	all := &ForwardResult{}
	for _, c := range calls {
		r, err := tr.Forward(context.Background(), loss, c)
		if err != nil {
			t.Fatal(err)
		}
		all.Outputs = append(all.Outputs, r.Outputs...)
		all.LossSum += r.LossSum
	}
	return all
}
