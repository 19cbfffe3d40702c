package engine

import "context"

// Batched datums
// (docs/engine-training.md, "Datums through each layer together"). A call's
// datums run through each layer together when they fit, their rows one after
// another, so every base product (x·Wᵀ forward, dy·W backward) packs and
// streams W once for all of them rather than once per datum. What is per row
// (products, norms, rotary, SwiGLU) keeps its bits: the kernels fix each
// output row's reduction order whatever the other rows. What is per sequence
// stays per datum: attention reads the datum's own cache (segment), each
// datum's loss rows are scored by its own scorer, and each datum's LoRA
// gradient is summed over its own rows alone and added to the call's pending
// gradient in datum order (weightGrads), as one datum after another adds it
// (TestBatchedDatumsKeepBits).

// segment is one datum's rows in a batched pass.
type segment struct {
	d, off, n int // the datum's index in the group, first row, rows
	cache     *kvCache
}

// batchRows bounds a group's rows. A product over 512 rows already
// amortises its weight stream (BenchmarkBatchedProducts: 2 × 512 as one
// product of 1,024 rows takes 0.98-1.00 of the time, 8 × 128 in groups of
// 512 rows the same 0.87-0.88 as one group of 1,024), while each row more
// in a group is one more row of activations held at once: with 2,048 the
// 0.6B 2 × 512 step kept both datums' and peaked at 5.6 GB instead of 4.3.
// So datums of 512 rows or more run alone, and a group never holds more
// than one such datum would (a variable so a test can make small groups).
var batchRows = 512

// batches reports whether the trainer's model can batch datums: experts
// and latent attention run one datum a pass.
func (t *Trainer) batches() bool {
	c := t.base.cfg
	if c.MLA != nil || t.hasExperts() {
		return false
	}
	for li := range c.Layers {
		if c.IsMoELayer(li) {
			return false
		}
	}
	return true
}

// datumGroups splits a call's datums (one datum slot) into consecutive
// groups that run as one pass each and returns each group's end. A group
// grows while its rows fit batchRows, keep their activations under the
// keep limit (a datum that would recompute runs alone, as does every datum
// under SetKeepLimit(0)) and, under a call limit, its ActivationBytes fit
// that limit.
func (t *Trainer) datumGroups(lengths []int, backward bool) []int {
	var ends []int
	limit := t.callLimit.Load()
	rows := 0
	for i, n := range lengths {
		sum := rows + n
		fits := rows > 0 && t.batches() && sum <= batchRows && !t.recomputes(sum) &&
			(limit <= 0 || t.ActivationBytes([]int{sum}, backward) <= limit)
		if fits {
			ends[len(ends)-1], rows = i+1, sum
			continue
		}
		ends, rows = append(ends, i+1), n
	}
	return ends
}

// groupBytes is the arena a call of one datum slot takes: the need of its
// largest group (a group's pass holds every row's activations and the
// output layer's scratch for one chunk of its rows at a time, headRuns:
// within ActivationBytes of the summed rows).
func (t *Trainer) groupBytes(lengths []int, backward bool) int64 {
	var most int64
	lo := 0
	for _, hi := range t.datumGroups(lengths, backward) {
		sum := 0
		for _, n := range lengths[lo:hi] {
			sum += n
		}
		group := lengths[lo:hi]
		if hi-lo > 1 {
			group = []int{sum}
		}
		most = max(most, t.ActivationBytes(group, backward))
		lo = hi
	}
	return most
}

// runGroups runs the datums group after group in slot, adding each datum's
// loss to res in datum order; a group of one commits its gradient as
// runWaves does, a larger one has committed it as it went. On an error
// the slot's gradient is cleared.
func (t *Trainer) runGroups(ctx context.Context, slot *datumSlot, l Loss, data []Datum, res *ForwardResult, backward bool) error {
	losses := make([]float64, len(data))
	lo := 0
	for _, hi := range t.datumGroups(lengthsOf(data), backward) {
		if err := t.pass(slot, ctx.Err, l, data[lo:hi], res.Outputs[lo:hi], losses[lo:hi], backward); err != nil {
			t.clearLocal(slot)
			return err
		}
		for _, loss := range losses[lo:hi] {
			res.LossSum += loss
		}
		if backward && hi-lo == 1 {
			t.commitLocal(slot)
		}
		lo = hi
	}
	return nil
}

func lengthsOf(data []Datum) []int {
	ls := make([]int, len(data))
	for i, d := range data {
		ls[i] = len(d.ModelInput)
	}
	return ls
}

// setCache points every datum's cache of layer li at its rows of the
// layer's k and v slabs (width floats a row).
func (ps *datumPass) setCache(li int, ks, vs []float32, width int) {
	for _, sg := range ps.segs {
		lo, hi := sg.off*width, (sg.off+sg.n)*width
		sg.cache.k[li], sg.cache.v[li] = ks[lo:hi:hi], vs[lo:hi:hi]
	}
}

// heads runs the output layer on the group's rows of x and returns the
// gradient at the final norm's output (backward). Datums whose rows fit
// one chunk of the group's (headRuns) share it: one product streams the
// output matrix (622 MB on the 0.6B shape) forward and once more backward
// for all of them instead of once per datum. A run of one datum keeps its
// head gradient local and commits it after; a run of several commits it
// datum by datum in weightGrads, the order one datum after another gives.
// Each run's scratch is freed when it is done.
func (ps *datumPass) heads(l Loss, ds []Datum, x [][]float32, outs []DatumOutput, losses []float64) [][]float32 {
	if len(ps.segs) == 1 {
		return ps.head(l, ds, x, outs, losses, nil)
	}
	var dxnF [][]float32
	if ps.backward {
		dxnF = ps.ar.rows(ps.n, ps.c.Hidden)
	}
	for _, run := range headRuns(ps.segs, headChunkRows(ps.n, ps.c.VocabSize)) {
		o, e := run[0].off, run[len(run)-1].off+run[len(run)-1].n
		one := *ps
		one.n, one.cache, one.segs = e-o, run[0].cache, make([]segment, len(run))
		for i, sg := range run {
			sg.off -= o // the run's rows are one.head's
			one.segs[i] = sg
		}
		mark := ps.ar.mark()
		var d [][]float32
		if dxnF != nil {
			d = dxnF[o:e]
		}
		one.head(l, ds, x[o:e], outs, losses, d)
		ps.ar.release(mark)
		if mod := ps.t.head; mod != nil && ps.backward && len(run) == 1 {
			ps.t.commitParam(ps.slot, mod.b)
			ps.t.commitParam(ps.slot, mod.a)
		}
	}
	return dxnF
}

// headRuns splits a group's datums into runs of consecutive datums whose
// rows fit one chunk of the output layer (rows: the group's chunk, which
// ActivationBytes of the group's rows counts). A datum longer than that
// runs alone, a chunk at a time, as in a call of its own.
func headRuns(segs []segment, rows int) [][]segment {
	var runs [][]segment
	start, n := 0, 0
	for i, sg := range segs {
		if i > 0 && n+sg.n <= rows {
			runs[len(runs)-1], n = segs[start:i+1], n+sg.n
			continue
		}
		runs, start, n = append(runs, segs[i:i+1]), i, sg.n
	}
	return runs
}

// weightGrads adds an adapted matrix's LoRA gradients (from the outputs'
// gradients dys, the forward's A·x ts, dts = B'ᵀ·dy and the inputs xs) to
// the slot's local gradients. A group sums each datum's rows alone, from
// zero, and commits that datum's gradient before the next: the order one
// datum after another gives.
func (ps *datumPass) weightGrads(mod *trainModule, xs, ts, dys, dts [][]float32) {
	local := ps.slot.local
	if len(ps.segs) <= 1 {
		outerAcc(local(mod.b), mod.b.rows, mod.b.cols, dys, ts)
		outerAcc(local(mod.a), mod.a.rows, mod.a.cols, dts, xs)
		return
	}
	for _, sg := range ps.segs {
		o, e := sg.off, sg.off+sg.n
		outerAcc(local(mod.b), mod.b.rows, mod.b.cols, dys[o:e], ts[o:e])
		outerAcc(local(mod.a), mod.a.rows, mod.a.cols, dts[o:e], xs[o:e])
		ps.t.commitParam(ps.slot, mod.b)
		ps.t.commitParam(ps.slot, mod.a)
	}
}

// weightGradsShared is weightGrads of each of ls (layers on the same
// inputs xs, dts their A outputs' gradients) with their A gradients in
// one outerAccShared per segment.
func (ps *datumPass) weightGradsShared(ls []sharedLinear, xs [][]float32, dts [][][]float32) {
	local := ps.slot.local
	a := ls[0].mod.a
	dsts := make([][]float32, len(ls))
	uss := make([][][]float32, len(ls))
	for i, l := range ls {
		dsts[i] = local(l.mod.a)
	}
	segs := ps.segs
	if len(segs) <= 1 {
		segs = []segment{{off: 0, n: len(dts[0])}}
	}
	for _, sg := range segs {
		o, e := sg.off, sg.off+sg.n
		for i, l := range ls {
			outerAcc(local(l.mod.b), l.mod.b.rows, l.mod.b.cols, l.dys[o:e], l.ts[o:e])
			uss[i] = dts[i][o:e]
		}
		outerAccShared(dsts, a.rows, a.cols, uss, xs[o:e])
		if len(ps.segs) > 1 {
			for _, l := range ls {
				ps.t.commitParam(ps.slot, l.mod.b)
				ps.t.commitParam(ps.slot, l.mod.a)
			}
		}
	}
}
