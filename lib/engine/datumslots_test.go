package engine

import (
	"context"
	"math"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestDatumSlotsKeepBits runs calls of five datums on a tiny model with
// their datums side by side (GOMAXPROCS 2 with slotsPerCore 1, 2 and 4:
// waves of 2, 2 and 1, of 3 and 2, and of 5; GOMAXPROCS 3 with 1: 3 and
// 2) and one after another (GOMAXPROCS 1), and
// requires the same outputs, loss and accumulated gradients, bit for bit,
// forward only and with the backward pass, after a second call too (the
// slots' gradients are cleared when committed). Every slot's arena starts
// full of NaN, so a slot that read scratch it had not written would show.
func TestDatumSlotsKeepBits(t *testing.T) {
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 2}
		loss, _ := NewLoss(LossCrossEntropy, nil)
		data := forLoss(testData(m.cfg.VocabSize, 5, 9, 20, 4, 33, 17), LossCrossEntropy)
		type run struct {
			fwd, fb []*ForwardResult
			grads   [][]float32
		}
		call := func(procs, per int) run {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			defer func(old int) { slotsPerCore = old }(slotsPerCore)
			slotsPerCore = per
			tr := mustTrainer(t, m, cfg)
			randomizeB(t, tr, 1, 0.05)
			lengths := []int{9, 20, 4, 33, 17}
			want := map[int]int{2: 2, 4: 3, 8: 5, 3: 3}[procs*per] // evened over the waves
			if procs == 1 || tr.hasExperts() {
				want = 1 // one core; the stacked experts' gradients have one buffer
			}
			if got := tr.datumSlots(lengths, true); got != want {
				t.Fatalf("%s: GOMAXPROCS=%d runs %d datums at once, want %d", name, procs, got, want)
			}
			tr.slotsFor(want, 0)
			for _, s := range tr.slots {
				s.ar.buf = slices.Repeat([]float32{float32(math.NaN())}, 1<<20)
			}
			var r run
			for range 2 {
				fwd, fb := forwardBoth(t, tr, loss, data)
				r.fwd, r.fb = append(r.fwd, fwd), append(r.fb, fb)
			}
			for _, s := range tr.slots {
				if s.ar.peak > len(s.ar.buf) {
					t.Fatalf("%s: a slot's arena needs %d floats, more than the poisoned %d", name, s.ar.peak, len(s.ar.buf))
				}
			}
			r.grads = gradBits(tr)
			return r
		}
		one := call(1, 4)
		for _, pp := range [][2]int{{2, 1}, {2, 2}, {2, 4}, {3, 1}} {
			procs := pp[0] * pp[1]
			side := call(pp[0], pp[1])
			if !reflect.DeepEqual(one.fwd, side.fwd) || !reflect.DeepEqual(one.fb, side.fb) {
				t.Fatalf("%s: outputs or loss differ between one datum at a time and %d at once", name, procs)
			}
			for i := range one.grads {
				if !slices.Equal(one.grads[i], side.grads[i]) {
					t.Fatalf("%s: gradients of tensor %d differ between one datum at a time and %d at once", name, i, procs)
				}
			}
		}
	}
}

// TestCallBytesCountsEverySlot requires CallBytes to be the memory a
// call's datum slots hold: each slot's arena (sized before the first
// datum) and the extra slots' gradients; one slot (ActivationBytes) for a
// single datum, for a mixture-of-experts model and on one core.
func TestCallBytesCountsEverySlot(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, name := range []string{models.TinyLlama, models.TinyQwen3MoE} {
		m := mustLoad(t, name)
		tr := mustTrainer(t, m, LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 2})
		loss, _ := NewLoss(LossCrossEntropy, nil)
		for _, lengths := range [][]int{{12}, {12, 30, 7}} {
			data := forLoss(testData(m.cfg.VocabSize, 3, lengths...), LossCrossEntropy)
			if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
				t.Fatal(err)
			}
			slots := tr.datumSlots(lengths, true)
			wantSlots := len(lengths)
			if len(lengths) == 1 || name == models.TinyQwen3MoE {
				wantSlots = 1
			}
			var held int64
			for _, s := range tr.slots[:slots] {
				held += 4 * int64(len(s.ar.buf))
				for _, g := range s.locals {
					held += 4 * int64(len(g))
				}
			}
			if got := tr.CallBytes(lengths, true); slots != wantSlots || got != held {
				t.Errorf("%s %v: %d slots holding %d bytes, CallBytes %d (want %d slots)", name, lengths, slots, held, got, wantSlots)
			}
		}
	}
}

// forwardBoth runs a forward call and then a forward_backward call of
// data and returns their results.
func forwardBoth(t *testing.T, tr *Trainer, loss Loss, data []Datum) (fwd, fb *ForwardResult) {
	t.Helper()
	fwd, err := tr.Forward(context.Background(), loss, data)
	if err != nil {
		t.Fatal(err)
	}
	if fb, err = tr.ForwardBackward(context.Background(), loss, data); err != nil {
		t.Fatal(err)
	}
	return fwd, fb
}

// TestCallLimitRunsFewerSlots requires SetCallLimit to bound CallBytes by
// running fewer datums at once, down to one datum's ActivationBytes,
// with the bits of one datum at a time.
func TestCallLimitRunsFewerSlots(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	m := mustLoad(t, models.TinyLlama)
	cfg := LoRAConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 2}
	loss, _ := NewLoss(LossCrossEntropy, nil)
	lengths := []int{12, 30, 7, 19}
	data := forLoss(testData(m.cfg.VocabSize, 3, lengths...), LossCrossEntropy)
	var want [][]float32
	for _, extra := range []int64{-1, 0, 1, 3} { // slots beside the first; -1: no limit
		tr := mustTrainer(t, m, cfg)
		one := tr.ActivationBytes(lengths, true)
		if extra >= 0 {
			tr.SetCallLimit(one + extra*tr.slotBytes(lengths, true))
		}
		wantSlots := map[int64]int{-1: 4, 0: 1, 1: 2, 3: 4}[extra]
		if got := tr.datumSlots(lengths, true); got != wantSlots || tr.CallBytes(lengths, true) != one+int64(got-1)*tr.slotBytes(lengths, true) {
			t.Fatalf("limit of %d extra slots: %d slots, CallBytes %d", extra, got, tr.CallBytes(lengths, true))
		}
		if _, err := tr.ForwardBackward(context.Background(), loss, data); err != nil {
			t.Fatal(err)
		}
		if len(tr.slots) != wantSlots {
			t.Fatalf("limit of %d extra slots: the call made %d slots", extra, len(tr.slots))
		}
		g := gradBits(tr)
		if want == nil {
			want = g
		}
		for i := range want {
			if !slices.Equal(want[i], g[i]) {
				t.Fatalf("limit of %d extra slots: gradients of tensor %d differ", extra, i)
			}
		}
	}
}
