package engine

import (
	"context"
	"sync"
)

// A small model's call runs its datums side by side, one per core, each
// on one goroutine from its first layer to its last, rather than one after
// another with every product split across the cores. The tiny models'
// products are some 10 µs (128 tokens × 64 columns): splitting each one
// left the cores handing work back and forth, a worker waiting (spinning,
// then asleep) through every serial stretch between products, and the
// step's CPU time paid for those waits (issue 34). Side by side, each
// core keeps busy on its own datum and nothing waits but at the end of a
// wave.
//
// The bits do not change: a datum's gradient does not depend on the
// goroutines that compute it
// (docs/engine-training.md, "Datums through each layer together"), each
// slot keeps its datum's gradient apart, and the slots' gradients are added to the call's
// pending gradient in datum order, as one after another would add them
// (TestDatumSlotsKeepBits).

// datumSlot is what one datum in flight owns: its scratch arena and its
// local gradient of every parameter (the first slot's are the trainer's
// arena and the parameters' own local buffers).
type datumSlot struct {
	ar     *arena
	locals map[*param][]float32 // nil: each parameter's local
	// ws is the attention's scratch (per-worker key packs, as big as a
	// datum's keys), kept from datum to datum rather than made for each.
	ws workspace
}

// local is p's gradient for the slot's datum.
func (s *datumSlot) local(p *param) []float32 {
	if s.locals == nil {
		return p.local
	}
	return s.locals[p]
}

// parallelDatumBytes bounds the memory the extra slots of a call may take
// (their arenas and gradients, kept for the next call as the trainer's
// arena is): a datum that needs more has products large enough to split
// across the cores.
const parallelDatumBytes = 32 << 20

// slotsPerCore is how many datums per core a wave may hold. The cores
// claim a wave's datums one at a time, so a core the machine holds back
// (another process, a slow virtual CPU) runs fewer of them instead of
// the others waiting for it at the end of every wave of one per core (a
// variable so a test can make waves of one per core).
var slotsPerCore = 4

// datumSlots is how many datums of a call over datums of these lengths
// run at once: up to slotsPerCore per core on a small model with dense
// layers (Model.groups; an expert's gradient is a view of its stacked
// parameter's own buffer), as many as parallelDatumBytes and the call
// limit (SetCallLimit) hold, evened out over the waves; else one.
func (t *Trainer) datumSlots(lengths []int, backward bool) int {
	cores := t.base.groups()
	if cores <= 1 || len(lengths) <= 1 || t.hasExperts() {
		return 1
	}
	slot := t.slotBytes(lengths, backward)
	room := int64(parallelDatumBytes)
	if limit := t.callLimit.Load(); limit > 0 {
		room = min(room, limit-t.ActivationBytes(lengths, backward))
	}
	if room < slot {
		return 1
	}
	most := int(min(int64(min(len(lengths), slotsPerCore*cores)), 1+room/slot))
	// Waves of equal width: 8 datums in waves of 5 and 3 left a core idle
	// for half the second; in two of 4 neither waits.
	waves := (len(lengths) + most - 1) / most
	return (len(lengths) + waves - 1) / waves
}

// SetCallLimit bounds what a call may take beyond StateBytes (CallBytes)
// by running fewer datums at once; 0 (the default) leaves only the
// trainer's own bound. A call never takes fewer than one datum's
// ActivationBytes. Safe while a call runs; it applies to the next.
func (t *Trainer) SetCallLimit(bytes int64) { t.callLimit.Store(bytes) }

// slotBytes is the memory of one extra slot: an arena for the longest
// datum and, with a backward pass, a gradient of every parameter.
func (t *Trainer) slotBytes(lengths []int, backward bool) int64 {
	b := t.ActivationBytes(lengths, backward)
	if backward {
		for _, p := range t.params {
			b += 4 * int64(len(p.local))
		}
	}
	return b
}

// CallBytes is the memory a forward (backward false) or forward_backward
// call over datums of these lengths needs on top of StateBytes: with datum
// slots, the trainer's arena (ActivationBytes) and that of every other
// slot running beside it, with its gradients; without, the arena of its
// largest batched group (groupBytes).
func (t *Trainer) CallBytes(lengths []int, backward bool) int64 {
	extra := int64(t.datumSlots(lengths, backward) - 1)
	if extra == 0 {
		return t.groupBytes(lengths, backward) // batched datums (batchpass.go)
	}
	return t.ActivationBytes(lengths, backward) + extra*t.slotBytes(lengths, backward)
}

func (t *Trainer) hasExperts() bool {
	for _, p := range t.params {
		if p.experts > 0 {
			return true
		}
	}
	return false
}

// slotsFor returns n slots, their arenas holding what a datum of the
// call needs (ActivationBytes) from the start. Slots past the first are
// kept for later calls, as the trainer's arena is.
func (t *Trainer) slotsFor(n int, need int64) []*datumSlot {
	if len(t.slots) == 0 {
		t.slots = []*datumSlot{{ar: &t.ar}}
	}
	for len(t.slots) < n {
		s := &datumSlot{ar: &arena{poison: t.ar.poison}, locals: map[*param][]float32{}}
		for _, p := range t.params {
			s.locals[p] = make([]float32, len(p.local))
		}
		t.slots = append(t.slots, s)
	}
	for _, s := range t.slots[:n] {
		s.ar.reserve(int(need / 4))
	}
	return t.slots[:n]
}

// runWaves runs the datums a wave of len(slots) at a time (the cores
// taking the wave's datums in turn), adding each
// datum's loss to res and, with backward, its gradient to the pending
// one, in datum order. The first slot (the trainer's arena) takes the
// last datum of each wave, so the arena's peak is the last datum's, as
// when they run one by one. On an error every slot's gradient is
// cleared.
func (t *Trainer) runWaves(ctx context.Context, slots []*datumSlot, l Loss, data []Datum, res *ForwardResult, backward bool) error {
	check := ctx.Err
	if len(slots) > 1 {
		var mu sync.Mutex // a context need not be safe for concurrent use
		check = func() error { mu.Lock(); defer mu.Unlock(); return ctx.Err() }
	}
	losses, errs := make([]float64, len(slots)), make([]error, len(slots))
	for lo := 0; lo < len(data); lo += len(slots) {
		w := min(len(slots), len(data)-lo)
		run := func(i int) {
			j := lo + i
			errs[i] = t.pass(slots[w-1-i], check, l, data[j:j+1], res.Outputs[j:j+1], losses[i:i+1], backward)
		}
		if w == 1 {
			run(0)
		} else {
			forkJoin(w, func(i int) { defer catch(&errs[i]); run(i) })
		}
		for i := range w {
			if errs[i] != nil {
				for _, s := range slots {
					t.clearLocal(s)
				}
				return errs[i]
			}
			res.LossSum += losses[i]
			if backward {
				t.commitLocal(slots[w-1-i])
			}
		}
	}
	return nil
}

// commitLocal adds slot s's finished datum's gradient to the call's
// pending gradient and clears it.
func (t *Trainer) commitLocal(s *datumSlot) {
	for _, p := range t.params {
		t.commitParam(s, p)
	}
}

// commitParam adds slot s's gradient of p to p's pending gradient and
// clears it.
func (t *Trainer) commitParam(s *datumSlot, p *param) {
	// axpy (vectorised): pending + float32(s·v) (not fused), and with a = 1 the
	// product is v exactly, so the A matrices get pending + v.
	a := float32(1)
	if p.isB {
		a = float32(t.scale)
	}
	axpy(p.pending, a, s.local(p))
	clear(s.local(p))
}

func (t *Trainer) clearLocal(s *datumSlot) {
	for _, p := range t.params {
		clear(s.local(p))
	}
}
