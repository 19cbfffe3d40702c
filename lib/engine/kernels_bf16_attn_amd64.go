package engine

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"unsafe"
)

// Attention on the bf16 path: when a layer's matrices are on it, the
// scores Q·Kᵀ and the weighted values P·V run on the same tiles, with the
// queries, keys, values and probabilities rounded to bfloat16 and the
// softmax in float32 vectors (bf16Softmax).
// A sequence's keys and values are rounded and packed as they arrive and
// kept beside its float32 cache (kvCache.bf16), so a decoding step packs
// one position, and every block of queries reads them from there.
// Each score is one accumulator over the head's dimensions; each output
// one accumulator over key pairs in ascending order, in chunks of 32 keys
// counted from key 0, with zero probabilities outside the query's keys,
// so a query's bits depend on neither the block it is in nor the batch:
// prefill and decode agree.

// bf16Attention reports whether layer's attention takes the bf16 path:
// its output projection does (the path is on for the model), heads are
// whole chunks of 32 and a KV head's queries fit one 32-row tile.
func (m *Model) bf16Attention(layer int) bool {
	c := m.cfg
	return m.w != nil && layer < len(m.w.layers) && m.w.layers[layer].o.vn != nil &&
		c.MLA == nil && c.HeadDim%32 == 0 && c.Heads/c.KVHeads <= 32
}

// pack rounds and packs keys and values [from, end) of one KV head
// (element off of rows kvd apart in ks and vs), growing kv to hold them.
func (kv *bf16KV) pack(ks, vs []float32, from, end, kvd, off, hd int) {
	kv.grow(bf16Cols(end), hd)
	stage := bf16Pool.Get().(*[]uint16)
	defer bf16Pool.Put(stage)
	start := from &^ 1 // values go in key pairs
	rows := growU16(*stage, (end-start+1)&^1*hd)
	*stage = rows
	stageRows(rows, ks, start, end, kvd, off, hd)
	// Key r's dimension pair p is one 32-bit word, the 16 keys' words of
	// a pair 64 bytes apart.
	k32 := unsafe.Slice((*uint32)(unsafe.Pointer(&kv.k[0])), len(kv.k)/2)
	r32 := unsafe.Slice((*uint32)(unsafe.Pointer(&rows[0])), len(rows)/2)
	for r := from; r < end; r++ {
		blk, src := k32[r/16*8*hd+r%16:], r32[(r-start)*hd/2:(r-start+1)*hd/2]
		for p, v := range src {
			blk[p*16] = v
		}
	}
	stageRows(rows, vs, start, end, kvd, off, hd)
	for d := 0; d < hd; d += 16 {
		bf16PackPairs(&kv.vt[d*kv.ldk+start*16], &rows[d], 2*hd, len(rows)/hd/2)
	}
}

// grow makes room for ldk keys (a multiple of 32), at least doubling: the
// keys' blocks extend in place, the values' dimension blocks move apart.
func (kv *bf16KV) grow(ldk, hd int) {
	if ldk <= kv.ldk {
		return
	}
	ldk = max(ldk, 2*kv.ldk)
	k, vt := make([]uint16, ldk*hd), make([]uint16, ldk*hd)
	copy(k, kv.k)
	for d := 0; d < hd && kv.ldk > 0; d += 16 {
		copy(vt[d*ldk:], kv.vt[d*kv.ldk:(d+16)*kv.ldk])
	}
	kv.k, kv.vt, kv.ldk = k, vt, ldk
}

// stageRows rounds rows [base, end) of one head into dst as rows of hd,
// zero up to len(dst).
func stageRows(dst []uint16, src []float32, base, end, kvd, off, hd int) {
	for r := base; r < end; r++ {
		bf16RoundRow(&dst[(r-base)*hd], &src[r*kvd+off], hd)
	}
	clear(dst[(end-base)*hd:])
}

// growU16 returns s resized to n, reallocated when too small.
func growU16(s []uint16, n int) []uint16 {
	if cap(s) < n {
		return make([]uint16, n)
	}
	return s[:n]
}

// bf16AttnWork is a worker's room for one block: its queries and
// probabilities in bfloat16, its scores and outputs in float32.
type bf16AttnWork struct {
	q, p    []uint16
	sc, out []float32
}

var (
	bf16WorkPool = sync.Pool{New: func() any { return new(bf16AttnWork) }}
)

// attentionBF16 is attention on the bf16 path; false when the layer is not
// on it.
func (m *Model) attentionBF16(ws *workspace, rows []row, layer int) bool {
	if !m.bf16Attention(layer) {
		return false
	}
	c := m.cfg
	hd, kvh := c.HeadDim, c.KVHeads
	runs := bf16Runs(rows)
	packs := make([]*bf16KV, len(runs)*kvh)
	for ri, r := range runs {
		st := rows[r.i].seq.bf16Cache(c)
		st.n[layer] = min(st.n[layer], rows[r.i].pos) // positions rewritten since
		for h := range kvh {
			packs[ri*kvh+h] = &st.kv[layer][h]
		}
	}
	fresh := 0 // positions to pack
	for _, r := range runs {
		fresh += rows[r.i+r.n-1].pos + 1 - rows[r.i].seq.bf16.n[layer]
	}
	forkJoinWork(len(packs), fresh*kvh*hd, func(u int) {
		r := runs[u/kvh]
		seq := rows[r.i].seq
		packs[u].pack(seq.k[layer], seq.v[layer], seq.bf16.n[layer], rows[r.i+r.n-1].pos+1, kvh*hd, u%kvh*hd, hd)
	})
	for _, r := range runs {
		rows[r.i].seq.bf16.n[layer] = rows[r.i+r.n-1].pos + 1
	}
	per := max(1, 32/(c.Heads/kvh))
	var units []bf16Unit
	work := 0 // multiply-adds, roughly
	for ri, r := range runs {
		for b := 0; b < r.n; b += per {
			n := min(per, r.n-b)
			work += 2 * n * c.Heads * (rows[r.i+b].pos + n) * hd
			for h := range kvh {
				units = append(units, bf16Unit{i: r.i + b, n: n, kvh: h, kv: packs[ri*kvh+h]})
			}
		}
	}
	// Longest blocks (the latest positions) first, for balance.
	slices.SortStableFunc(units, func(a, b bf16Unit) int { return cmp.Compare(rows[b.i].pos, rows[a.i].pos) })
	forkJoinWork(len(units), work, func(i int) {
		w := bf16WorkPool.Get().(*bf16AttnWork)
		defer bf16WorkPool.Put(w)
		m.attendBF16(ws, rows, units[i], layer, w)
	})
	return true
}

// bf16Unit is the query heads of KV head kvh at rows [i, i+n), one
// sequence's consecutive positions, with that head's packed keys and values.
type bf16Unit struct {
	i, n, kvh int
	kv        *bf16KV
}

// bf16Run is rows [i, i+n) of one sequence, consecutive positions.
type bf16Run struct{ i, n int }

func bf16Runs(rows []row) []bf16Run {
	var runs []bf16Run
	for i := 0; i < len(rows); {
		n := runAt(rows, i)
		runs = append(runs, bf16Run{i, n})
		i += n
	}
	return runs
}

// attendBF16 computes the attention of unit u into ws.att.
func (m *Model) attendBF16(ws *workspace, rows []row, u bf16Unit, layer int, w *bf16AttnWork) {
	kv := u.kv
	c := m.cfg
	hd, group := c.HeadDim, c.Heads/c.KVHeads
	p0 := rows[u.i].pos
	k0 := c.firstKey(layer, p0) &^ 31 // the block's first key chunk
	ld := bf16Cols(p0 + u.n - k0)
	nq := u.n * group
	w.q, w.p = growU16(w.q, 32*hd), growU16(w.p, 32*ld)
	w.sc, w.out = growF32(w.sc, 32*ld), growF32(w.out, 32*hd)
	clear(w.q[nq*hd:])
	for j := range nq {
		h := u.kvh*group + j%group
		bf16RoundRow(&w.q[j*hd], &ws.q[u.i+j/group][h*hd], hd)
	}
	bf16ScoreTiles(w.q, hd, nq, kv.k[k0*hd:], 16*hd, hd, ld/16, w.sc, ld)
	scale := float32(1 / math.Sqrt(float64(hd)))
	sinks := m.sinks(layer)
	clear(w.p[nq*ld:])
	inf := float32(math.Inf(-1))
	for j := range nq {
		pos := p0 + j/group
		sc := w.sc[j*ld : (j+1)*ld]
		fillF32(sc[:c.firstKey(layer, pos)-k0], inf)
		fillF32(sc[pos-k0+1:], inf)
		sink := inf
		if sinks != nil {
			sink = sinks[u.kvh*group+j%group]
		}
		bf16Softmax(&w.p[j*ld], &sc[0], ld, scale, sink)
	}
	bf16Tiles(w.p, ld, nq, kv.vt[k0*16:], 16*kv.ldk, ld, hd/16, w.out, hd)
	for j := range nq {
		h := u.kvh*group + j%group
		copy(ws.att[u.i+j/group][h*hd:(h+1)*hd], w.out[j*hd:(j+1)*hd])
	}
}

// growF32 returns s resized to n, reallocated when too small.
func growF32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// bf16Cache returns the sequence's packed keys and values, made on first
// use.
func (c *kvCache) bf16Cache(cfg Config) *bf16KVCache {
	if c.bf16 == nil {
		c.bf16 = &bf16KVCache{kv: make([][]bf16KV, cfg.Layers), n: make([]int, cfg.Layers)}
		for l := range c.bf16.kv {
			c.bf16.kv[l] = make([]bf16KV, cfg.KVHeads)
		}
	}
	return c.bf16
}

func fillF32(s []float32, v float32) {
	for i := range s {
		s[i] = v
	}
}

// forkJoinWork is forkJoin for n pieces of work multiply-adds in all:
// on the calling goroutine when waking another core would cost more
// (parallelMinWork), as a decoding step's few positions are.
func forkJoinWork(n, work int, fn func(i int)) {
	if work >= parallelMinWork {
		forkJoin(n, fn)
		return
	}
	for i := range n {
		fn(i)
	}
}

// bf16AttnPrep readies the rows' packed caches for the bf16 path's
// attention inside a fused fork of layers [l0, l1] (attendBF16Head), as
// attentionBF16 does at each layer's start: each sequence's packed cache
// made, and its packed positions cut back to the rows' first (positions
// rewritten since). No layer of the fork has run its attention yet, so
// every layer's count is the one attentionBF16 would find.
func (m *Model) bf16AttnPrep(rows []row, l0, l1 int) {
	for l := l0; l <= l1; l++ {
		if !m.bf16Attention(l) {
			continue
		}
		for i := 0; i < len(rows); i += runAt(rows, i) {
			st := rows[i].seq.bf16Cache(m.cfg)
			st.n[l] = min(st.n[l], rows[i].pos)
		}
	}
}

// attendBF16Head is attentionBF16's work for KV head kvh of layer: the
// rows' new keys and values of that head packed, then its query heads
// attended, a run of one sequence's consecutive positions per unit as
// there. Heads touch only their own packed cache and outputs, so each
// can run once its rows are finished (fusedLayers).
func (m *Model) attendBF16Head(ws *workspace, rows []row, layer, kvh int) {
	c := m.cfg
	hd := c.HeadDim
	for i := 0; i < len(rows); i += runAt(rows, i) {
		seq := rows[i].seq
		end := rows[i+runAt(rows, i)-1].pos + 1
		seq.bf16.kv[layer][kvh].pack(seq.k[layer], seq.v[layer], seq.bf16.n[layer], end, c.KVHeads*hd, kvh*hd, hd)
	}
	per := max(1, 32/(c.Heads/c.KVHeads))
	w := bf16WorkPool.Get().(*bf16AttnWork)
	defer bf16WorkPool.Put(w)
	for i := 0; i < len(rows); i += runAt(rows, i) {
		n, kv := runAt(rows, i), &rows[i].seq.bf16.kv[layer][kvh]
		for b := 0; b < n; b += per {
			m.attendBF16(ws, rows, bf16Unit{i: i + b, n: min(per, n-b), kvh: kvh, kv: kv}, layer, w)
		}
	}
}

// bf16AttnDone records the positions attendBF16Head packed for layer,
// once every KV head has attended.
func bf16AttnDone(rows []row, layer int) {
	for i := 0; i < len(rows); i += runAt(rows, i) {
		rows[i].seq.bf16.n[layer] = rows[i+runAt(rows, i)-1].pos + 1
	}
}

// bf16AttnKeyNext has the scores Q·Kᵀ on AVX512-BF16 prefetch each
// call's next six blocks of keys (avxBF16KernelsNx) instead of a line
// 1 KiB ahead within each block (avxBF16KernelsPf), from
// bf16KeyNextMinBlocks blocks of 16 keys on: a block is 4 KiB (heads of
// 128), so the prefetch within it left its first quarter to demand
// misses, six pages at a time. The last call, with no next blocks,
// prefetches within its own. The kernels' sums are the same: the same
// bits (TestBF16ScoreTilesNextMatchesEmulation). A variable for
// BenchmarkDecodeLong's LONG_SWITCH=keynext.
var bf16AttnKeyNext = true

// bf16KeyNextMinBlocks is the fewest blocks of 16 keys for which the
// scores prefetch the next call's blocks (bf16AttnKeyNext): with the
// first call's blocks not prefetched at all, a few calls lost (0.92 at
// position 128, one row).
var bf16KeyNextMinBlocks = 16

// bf16ScoreTiles is bf16Tiles for the attention's scores: with
// bf16AttnKeyNext on AVX512-BF16 and bf16KeyNextMinBlocks blocks or
// more, tokens in groups of bf16AVX.t by calls of six blocks, each but
// the last prefetching the next call's.
func bf16ScoreTiles(x []uint16, ldx, m int, w []uint16, ws, kp, nb int, out []float32, ldo int) {
	if !bf16AttnKeyNext || nb < bf16KeyNextMinBlocks || bf16UseAMX() {
		bf16Tiles(x, ldx, m, w, ws, kp, nb, out, ldo)
		return
	}
	const n = 6
	for t := 0; t < m; t += bf16AVX.t {
		tn := min(bf16AVX.t, m-t)
		o := &out[t*ldo]
		for j := 0; j < nb; j += n {
			k := avxBF16KernelsNx[tn]
			if j+n >= nb {
				k = avxBF16KernelsPf[tn][min(n, nb-j)]
			}
			k(&x[t*ldx], 2*ldx, &w[j*ws], 2*ws, kp/2, (*float32)(unsafe.Add(unsafe.Pointer(o), 4*16*j)), 4*ldo)
		}
	}
}
