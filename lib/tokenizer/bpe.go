package tokenizer

import (
	"sync"
	"sync/atomic"
)

// merge is one BPE merge rule: the pair's rank (lower merges first) and the
// id of the merged token.
type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// bpeModel is a byte-level BPE model over raw bytes.
type bpeModel struct {
	vocab        map[string]int // raw bytes → id
	merges       map[uint64]merge
	byteID       [256]int32
	ignoreMerges bool // a piece that is itself in the vocabulary is one token

	cache pieceCache
}

// pieceCache remembers the ids of recently encoded pieces. Reads go to an
// immutable snapshot without locking (the hot path of every Encode); new
// entries collect in a locked map that is folded into a fresh snapshot as
// it grows, so the copying cost stays proportional to the insertions.
type pieceCache struct {
	snap  atomic.Pointer[map[string][]int32]
	mu    sync.Mutex
	dirty map[string][]int32
}

func (c *pieceCache) get(k string) ([]int32, bool) {
	if m := c.snap.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v, true
		}
	}
	c.mu.Lock()
	v, ok := c.dirty[k]
	c.mu.Unlock()
	return v, ok
}

func (c *pieceCache) put(k string, v []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirty == nil {
		c.dirty = map[string][]int32{}
	}
	c.dirty[k] = v
	old := c.snap.Load()
	n := 0
	if old != nil {
		n = len(*old)
	}
	if len(c.dirty) < 64+n/4 {
		return
	}
	if n+len(c.dirty) > maxCacheEntries {
		n, old = 0, nil // start over rather than grow without bound
	}
	fresh := make(map[string][]int32, n+len(c.dirty))
	if old != nil {
		for k, v := range *old {
			fresh[k] = v
		}
	}
	for k, v := range c.dirty {
		fresh[k] = v
	}
	c.snap.Store(&fresh)
	c.dirty = map[string][]int32{}
}

func (c *pieceCache) reset() {
	c.mu.Lock()
	c.snap.Store(nil)
	c.dirty = nil
	c.mu.Unlock()
}

const (
	maxCachedPiece  = 256
	maxCacheEntries = 1 << 17
	naiveMaxSymbols = 128 // longer pieces use the heap-based merge loop
)

// encode appends the ids of one pre-tokenized piece to out.
func (m *bpeModel) encode(piece string, out []int) []int {
	switch len(piece) {
	case 0: // an unsplit pre-tokenizer passes empty text on (Tiny's)
		return out
	case 1:
		return append(out, int(m.byteID[piece[0]]))
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[piece]; ok {
			return append(out, id)
		}
	}
	if len(piece) <= maxCachedPiece {
		if ids, ok := m.cache.get(piece); ok {
			for _, id := range ids {
				out = append(out, int(id))
			}
			return out
		}
	}
	var buf [naiveMaxSymbols]int32
	var ids []int32
	if len(piece) <= naiveMaxSymbols {
		ids = m.mergeNaive(piece, buf[:0])
	} else {
		ids = m.mergeHeap(piece)
	}
	for _, id := range ids {
		out = append(out, int(id))
	}
	if len(piece) <= maxCachedPiece {
		stored := append([]int32(nil), ids...)
		key := string([]byte(piece)) // copy: piece points into the caller's text
		m.cache.put(key, stored)
	}
	return out
}

const noRank = int32(1<<31 - 1)

func (m *bpeModel) rank(a, b int32) merge {
	if mg, ok := m.merges[pairKey(a, b)]; ok {
		return mg
	}
	return merge{rank: noRank}
}

// mergeNaive applies merges lowest rank first (leftmost on ties) with a
// linear scan per merge: the fastest loop for the short pieces that make up
// nearly all text.
func (m *bpeModel) mergeNaive(piece string, syms []int32) []int32 {
	for i := 0; i < len(piece); i++ {
		syms = append(syms, m.byteID[piece[i]])
	}
	var rbuf [naiveMaxSymbols]merge
	ranks := rbuf[:len(syms)-1]
	for i := range ranks {
		ranks[i] = m.rank(syms[i], syms[i+1])
	}
	for len(ranks) > 0 {
		best := 0
		for i := 1; i < len(ranks); i++ {
			if ranks[i].rank < ranks[best].rank {
				best = i
			}
		}
		if ranks[best].rank == noRank {
			break
		}
		syms[best] = ranks[best].id
		syms = append(syms[:best+1], syms[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		if best > 0 {
			ranks[best-1] = m.rank(syms[best-1], syms[best])
		}
		if best < len(ranks) {
			ranks[best] = m.rank(syms[best], syms[best+1])
		}
	}
	return syms
}

// heapItem is a candidate merge of the symbol at pos with its right
// neighbour; it is stale when either symbol has changed since it was pushed.
type heapItem struct {
	rank        int32
	pos         int32
	left, right int32
	id          int32
}

func itemLess(a, b heapItem) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

type mergeHeap []heapItem

func (h *mergeHeap) push(it heapItem) {
	*h = append(*h, it)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !itemLess(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap) pop() heapItem {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	i := 0
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(s) && itemLess(s[l], s[small]) {
			small = l
		}
		if r < len(s) && itemLess(s[r], s[small]) {
			small = r
		}
		if small == i {
			break
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
	*h = s
	return top
}

// mergeHeap is the O(n log n) merge loop for long pieces (long runs of
// whitespace, digits-free CJK text, base64 blobs). Ties break on position,
// so it yields exactly what mergeNaive yields.
func (m *bpeModel) mergeHeap(piece string) []int32 {
	n := len(piece)
	ids := make([]int32, n)
	next := make([]int32, n)
	prev := make([]int32, n)
	for i := 0; i < n; i++ {
		ids[i] = m.byteID[piece[i]]
		next[i] = int32(i + 1)
		prev[i] = int32(i - 1)
	}
	next[n-1] = -1
	h := make(mergeHeap, 0, n)
	pushPair := func(p int32) {
		q := next[p]
		if q < 0 {
			return
		}
		if mg := m.rank(ids[p], ids[q]); mg.rank != noRank {
			h.push(heapItem{rank: mg.rank, pos: p, left: ids[p], right: ids[q], id: mg.id})
		}
	}
	for i := int32(0); i < int32(n-1); i++ {
		pushPair(i)
	}
	for len(h) > 0 {
		it := h.pop()
		p := it.pos
		q := next[p]
		if ids[p] != it.left || q < 0 || ids[q] != it.right {
			continue
		}
		// merge q into p
		ids[p] = it.id
		ids[q] = -1
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		if prev[p] >= 0 {
			pushPair(prev[p])
		}
		pushPair(p)
	}
	out := ids[:0]
	for p := int32(0); p >= 0; p = next[p] {
		out = append(out, ids[p])
	}
	return out
}
