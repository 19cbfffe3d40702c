package engine

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"sync"
)

// sampler picks tokens from logits according to a request's temperature,
// top-k and top-p. The probability arithmetic is float64 and in a fixed
// order, so a seeded draw is reproducible.
type sampler struct {
	vocab int
	temp  float64
	topK  int
	topP  float64
	raw   bool // report log softmax(logits), not the tempered distribution
	idx   []int
	exps  []float64 // exp(logit/T - max), during pick: from expsPool
}

// expsPool holds pick's exponentials between calls, shared by every
// sampler: a sampler of its own made each request's first token fault in
// a fresh 1.2 MB on a 150k vocabulary (300 pages), since the Go heap
// holding a model is collected too rarely to hand back the last one's
// (kvPool).
var expsPool = sync.Pool{New: func() any { return new([]float64) }}

func newSampler(vocab int, req SampleRequest) *sampler {
	s := &sampler{vocab: vocab, temp: req.Temperature, topK: req.TopK, topP: req.TopP, raw: req.ModelLogprobs}
	if s.topK <= 0 || s.topK >= vocab {
		s.topK = 0
	}
	if s.topP <= 0 || s.topP >= 1 {
		s.topP = 1
	}
	return s
}

// pick returns the next token and its log-probability under softmax(logits
// / T) over the full vocabulary (T = 1 when greedy).
func (s *sampler) pick(logits []float32, r *rng) (int, float64) {
	if s.temp == 0 {
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		return best, float64(logits[best]) - logSumExp(logits, 1)
	}
	// One pass of exponentials serves both the normaliser and the draw;
	// max and sum are logSumExp's (vector lanes, sumSquares' order), so at
	// T = 1 a drawn token's logprob has the bits of a prompt logprob.
	invT := 1 / s.temp
	mx := maxScaled(logits, invT)
	bp := expsPool.Get().(*[]float64)
	s.exps = slices.Grow((*bp)[:0], len(logits))[:len(logits)]
	sum := expScaledKeep(s.exps, logits, invT, mx)
	tok := s.draw(logits, sum, r)
	*bp, s.exps = s.exps, nil
	expsPool.Put(bp)
	if s.raw && invT != 1 {
		return tok, float64(logits[tok]) - logSumExp(logits, 1)
	}
	return tok, float64(float64(logits[tok])*invT) - (mx + math.Log(sum))
}

// draw samples from the unnormalised weights s.exps (total sum).
func (s *sampler) draw(logits []float32, sum float64, r *rng) int {
	u := r.float64()
	if s.topK == 0 && s.topP == 1 {
		// Full distribution: walk the cumulative mass in id order.
		target := u * sum
		var cum float64
		last := 0
		for i, e := range s.exps {
			if e == 0 {
				continue
			}
			cum += e
			last = i
			if target < cum {
				return i
			}
		}
		return last // rounding left target above the total
	}
	// Candidates most likely first: the top k, or the whole vocabulary
	// sorted when only top-p applies.
	if s.topK > 0 {
		s.idx = topK(logits, s.topK, s.idx)
	} else {
		s.idx = sortedByLogit(logits, s.idx)
	}
	// Renormalise over the candidates, then cut to the nucleus.
	var total float64
	for _, t := range s.idx {
		total += s.exps[t]
	}
	keep := len(s.idx)
	if s.topP < 1 {
		var cum float64
		for i, t := range s.idx {
			cum += s.exps[t]
			if cum >= s.topP*total {
				keep = i + 1
				break
			}
		}
	}
	var kept float64
	for _, t := range s.idx[:keep] {
		kept += s.exps[t]
	}
	target := u * kept
	var cum float64
	for _, t := range s.idx[:keep] {
		cum += s.exps[t]
		if target < cum {
			return t
		}
	}
	return s.idx[keep-1]
}

// byLogit orders token ids most likely first, lower id first on ties.
func byLogit(logits []float32) func(a, b int) int {
	return func(a, b int) int {
		if c := cmp.Compare(logits[b], logits[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
}

func sortedByLogit(logits []float32, buf []int) []int {
	buf = buf[:0]
	for i := range logits {
		buf = append(buf, i)
	}
	slices.SortFunc(buf, byLogit(logits))
	return buf
}

// topK returns the k most likely token ids, most likely first, using a
// size-k min-heap (O(V log k)) rather than sorting the vocabulary.
func topK(logits []float32, k int, buf []int) []int {
	k = min(k, len(logits))
	less := byLogit(logits)
	h := &idHeap{ids: buf[:0], worse: func(a, b int) bool { return less(a, b) > 0 }}
	for i := range logits {
		if len(h.ids) < k {
			heap.Push(h, i)
		} else if less(i, h.ids[0]) < 0 {
			h.ids[0] = i
			heap.Fix(h, 0)
		}
	}
	slices.SortFunc(h.ids, less)
	return h.ids
}

// idHeap keeps the worst candidate at the root.
type idHeap struct {
	ids   []int
	worse func(a, b int) bool
}

func (h *idHeap) Len() int           { return len(h.ids) }
func (h *idHeap) Less(i, j int) bool { return h.worse(h.ids[i], h.ids[j]) }
func (h *idHeap) Swap(i, j int)      { h.ids[i], h.ids[j] = h.ids[j], h.ids[i] }
func (h *idHeap) Push(x any)         { h.ids = append(h.ids, x.(int)) }
func (h *idHeap) Pop() any {
	x := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return x
}
