package engine

import (
	"runtime"
	"slices"
)

// Adapter products of a small batch in two forks. biasLoRA's per-adapter
// form runs, for every matrix and every adapter of the batch, A·x and
// then B·t as two matMul calls: with 8 requests of 8 adapters (RL's or a
// multi-tenant server's sampling) a 0.6B layer's q, k and v alone make 48
// products of 32K-98K weights, most of them under productWorkers' cut,
// so they ran one after another on the calling core while the other
// idled, and the rest paid a fork each. loraProducts runs every A-product
// of a step's matrices (q, k and v, or gate and up, or one) for every
// adapter as the pieces of one fork, then every B-product as another.
// Each element is matRows' dot of the same vectors added the same way as
// matMul's accumulate, the bias first as before: the same bits, and rows
// of different adapters never meet, so a row's output still does not
// depend on the batch.

// loraFork selects loraProducts for batches of up to loraForkRows rows
// (a variable so BenchmarkGenerateLoRA's GEN_LORA_AB=fork and
// BenchmarkLoRAForkSteps can compare the two in one process). Larger
// batches (prefill chunks) keep addLoRA, whose matMul packs an adapter's
// rows once for its tiles.
var loraFork = true

const loraForkRows = 16

// loraForkMinWork is the fewest multiply-adds of a stage that forks
// with a worker asleep; loraForkAwakeMinWork the fewest when none is
// (workerPool.sleeping: a spinning worker joins at once, a sleeping one
// takes a wake-up of ~60 µs on this KVM guest, longer than these stages
// on one core). Forking every stage from parallelMinWork, tiny-llama's
// steps, whose other products are too small to fork so its worker slept
// before each of the adapters' few forked stages, took 1.06-1.38x as
// long as with them on the calling core, while tiny-qwen3's, whose
// worker spins between its forked base products, gained by forking them
// on a quiet host. The 0.6B shape's stages at rank 32 are all 256K or
// more and fork as before
// (docs/engine-decoding.md, "Adapters' small products on the tiny models").
var (
	loraForkMinWork      = 4 * parallelMinWork
	loraForkAwakeMinWork = parallelMinWork
)

// loraMinPiece is the fewest weights of a loraProducts piece (64 KiB of
// float32): a rank-32 A of the 0.6B shape is one or two pieces.
const loraMinPiece = 1 << 14

// loraScratch is loraProducts' reusable state (workspace.lr).
type loraScratch struct {
	t     [3][][]float32 // A·x of each matrix, row by row
	ls    []*LoRA        // the batch's adapters, in order of first row
	prods []mat          // the products' matrices, A- or B-products
	pxs   [][][]float32  // their vectors
	pys   [][][]float32  // their outputs
	ps    []rowPiece
	rows  [][]float32 // backing for pxs and pys
	bs    []loraB     // the B-products, while the A-products run
	acc   bool
	piece func(i int)
	calls int // calls that ran products, for the tests
}

// loraB is a B-product: outputs ys += w·ts.
type loraB struct {
	w      mat
	ts, ys [][]float32
}

func (s *loraScratch) runPiece(i int) {
	p := s.ps[i]
	matRows(s.prods[p.w], s.pxs[p.w], s.pys[p.w], p.lo, p.hi, s.acc)
}

// loraProducts adds each row's adapter products to yss[i] = W_i·xs (the
// bias already added) for matrices mods[i] of layer, and reports whether
// it did; false leaves them to addLoRA.
func (ws *workspace) loraProducts(loras []*LoRA, layer int, xs [][]float32, mods []int, yss [][][]float32) bool {
	n := len(xs)
	s := &ws.lr
	if !loraFork || n > loraForkRows || len(mods) > len(s.t) {
		return false
	}
	s.ls = s.ls[:0]
	rank := 0
	for _, l := range loras {
		if l != nil && !slices.Contains(s.ls, l) {
			s.ls = append(s.ls, l)
			rank = max(rank, l.Rank)
		}
	}
	if len(s.ls) == 0 {
		return true
	}
	for i := range mods {
		s.t[i] = grow(s.t[i], n, rank)
	}
	s.calls++
	if s.piece == nil {
		s.piece = s.runPiece
	}
	// Every product's row lists, gathered once: two lists of at most n
	// rows for each A-product and each B-product.
	if cap(s.rows) < 4*len(mods)*n {
		s.rows = make([][]float32, 0, 4*len(mods)*n)
	}
	rows := s.rows[:0]
	gather := func(src [][]float32, l *LoRA, width int) [][]float32 {
		lo := len(rows)
		for b, lb := range loras {
			if lb == l {
				rows = append(rows, src[b][:width])
			}
		}
		return rows[lo:len(rows):len(rows)]
	}
	s.prods, s.pxs, s.pys = s.prods[:0], s.pxs[:0], s.pys[:0]
	b := s.bs[:0]
	for i, mod := range mods {
		for _, l := range s.ls {
			lp := l.pair(layer, mod)
			if lp == nil {
				continue
			}
			ts := gather(s.t[i], l, lp.a.rows)
			s.prods = append(s.prods, lp.a)
			s.pxs = append(s.pxs, gather(xs, l, len(xs[0])))
			s.pys = append(s.pys, ts)
			b = append(b, loraB{lp.b, ts, gather(yss[i], l, len(yss[i][0]))})
		}
	}
	s.run(false)
	s.prods, s.pxs, s.pys = s.prods[:0], s.pxs[:0], s.pys[:0]
	for _, p := range b {
		s.prods, s.pxs, s.pys = append(s.prods, p.w), append(s.pxs, p.ts), append(s.pys, p.ys)
	}
	s.run(true)
	clear(b)
	s.bs = b[:0]
	clear(s.pxs)
	clear(s.pys)
	clear(s.rows[:cap(s.rows)])
	clear(s.ls)
	return true
}

// run computes the products s.prods, adding to their outputs when acc,
// as one fork of row pieces (on the calling core when they are small).
func (s *loraScratch) run(acc bool) {
	s.acc = acc
	work := 0
	for i, w := range s.prods {
		work += w.rows * w.cols * len(s.pxs[i])
	}
	workers := 1
	if work >= loraForkMinWork || work >= loraForkAwakeMinWork && workPool.sleeping.Load() == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	s.ps = cutPieces(s.ps[:0], s.prods, 16, workers, loraMinPiece)
	if workers == 1 {
		for i := range s.ps {
			s.runPiece(i)
		}
		return
	}
	forkJoin(len(s.ps), s.piece)
}
