package engine

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// attnCase is one layer's attention inputs for positions [0, n) of one
// sequence: random queries and a cache of random keys and values.
type attnCase struct {
	m     *Model
	layer int
	q     [][]float32
	cache *kvCache
}

func newAttnCase(m *Model, layer, n int, seed uint64) attnCase {
	c := m.cfg
	rng := rand.New(rand.NewPCG(seed, 7))
	cache := m.newCache(n)
	cache.n = n
	for _, kv := range [][]float32{cache.k[layer], cache.v[layer]} {
		for i := range kv {
			kv[i] = float32(rng.NormFloat64())
		}
	}
	return attnCase{m: m, layer: layer, q: randVecs(rng, n, c.Heads*c.HeadDim), cache: cache}
}

// run computes the attention of positions [lo, hi) in one call.
func (a attnCase) run(lo, hi int) [][]float32 {
	ws := &workspace{q: a.q[lo:hi], att: newOutputs(hi-lo, len(a.q[0]))}
	rows := make([]row, hi-lo)
	for i := range rows {
		rows[i] = row{seq: a.cache, pos: lo + i}
	}
	a.m.attention(ws, rows, a.layer)
	return ws.att
}

// pieces computes every position's attention as a prefill of the first
// cut positions followed by one call per position, as decoding does.
func (a attnCase) pieces(cut int) [][]float32 {
	out := a.run(0, cut)
	for p := cut; p < len(a.q); p++ {
		out = append(out, a.run(p, p+1)...)
	}
	return out
}

// TestBF16AttentionInvariant: on the bf16 path a query's attention has
// the same bits in a 100-position prefill, in a shorter prefill followed
// by decoding steps, at any thread count, on AMX and on AVX512-BF16, in
// full-attention layers and in GPT-OSS's sliding-window layers with
// sinks; and the path is really taken (the float32 path's bits differ).
func TestBF16AttentionInvariant(t *testing.T) {
	needBF16(t)
	for _, name := range []string{"tinker-local/tiny-qwen3", "tinker-local/tiny-gpt-oss"} {
		f32, bf := loadBF16Pair(t, name)
		for layer := range 2 {
			a := newAttnCase(bf, layer, 100, uint64(layer+1))
			if !bf.bf16Attention(layer) {
				t.Fatalf("%s layer %d: not on the bf16 path", name, layer)
			}
			paths := []bool{false}
			if amxReady() {
				paths = append(paths, true)
			}
			for _, amx := range paths {
				withAMX(amx, func() {
					want := a.run(0, 100)
					for _, procs := range []int{1, 3} {
						old := runtime.GOMAXPROCS(procs)
						got := a.pieces(37)
						runtime.GOMAXPROCS(old)
						for p := range want {
							if !slices.Equal(want[p], got[p]) {
								t.Fatalf("%s layer %d amx=%v procs=%d: position %d differs between prefill and decode",
									name, layer, amx, procs, p)
							}
						}
					}
					checkAttnReference(t, a, want)
				})
			}
			checkRepacked(t, a)
			fa := a
			fa.m = f32
			if slices.Equal(fa.run(0, 100)[99], a.run(0, 100)[99]) {
				t.Fatalf("%s layer %d: the bf16 path gave the float32 path's bits", name, layer)
			}
		}
	}
}

// checkRepacked rewrites positions 60 on of a's cache, as a sequence
// taken back and continued differently is, and checks that they are
// packed again: their attention matches a fresh copy of the cache's.
func checkRepacked(t *testing.T, a attnCase) {
	t.Helper()
	kvd := a.m.cfg.KVHeads * a.m.cfg.HeadDim
	a.run(0, 100)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, kv := range [][]float32{a.cache.k[a.layer], a.cache.v[a.layer]} {
		for i := 60 * kvd; i < 100*kvd; i++ {
			kv[i] = float32(rng.NormFloat64())
		}
	}
	fresh := a
	fresh.cache = a.cache.clone(a.cache.n, 100, nil)
	want, got := fresh.run(0, 100)[60:], a.run(60, 100)
	for p := range got {
		if !slices.Equal(want[p], got[p]) {
			t.Fatalf("layer %d: position %d after rewriting: stale keys or values", a.layer, 60+p)
		}
	}
}

// checkAttnReference compares the attention outputs got with a float64
// computation from the queries, keys and values rounded to bfloat16: the
// probabilities are rounded too, so each output may be off by a few
// parts in a thousand of the values' size.
func checkAttnReference(t *testing.T, a attnCase, got [][]float32) {
	t.Helper()
	c := a.m.cfg
	hd, kvd, group := c.HeadDim, c.KVHeads*c.HeadDim, c.Heads/c.KVHeads
	r := func(f float32) float64 { return float64(bf16(roundBF16(f))) }
	sinks := a.m.sinks(a.layer)
	worst := 0.0
	for p := range a.q {
		for h := range c.Heads {
			off := h / group * hd
			first := c.firstKey(a.layer, p)
			s := make([]float64, p+1-first)
			mx := math.Inf(-1)
			if sinks != nil {
				mx = float64(sinks[h])
			}
			for j := range s {
				for d := range hd {
					s[j] += r(a.q[p][h*hd+d]) * r(a.cache.k[a.layer][(first+j)*kvd+off+d])
				}
				s[j] /= math.Sqrt(float64(hd))
				mx = math.Max(mx, s[j])
			}
			var sum float64
			if sinks != nil {
				sum = math.Exp(float64(sinks[h]) - mx)
			}
			for j := range s {
				s[j] = math.Exp(s[j] - mx)
				sum += s[j]
			}
			for d := range hd {
				var o float64
				for j := range s {
					o += s[j] / sum * r(a.cache.v[a.layer][(first+j)*kvd+off+d])
				}
				worst = math.Max(worst, math.Abs(o-float64(got[p][h*hd+d])))
			}
		}
	}
	if worst > 0.02 { // values are standard normal
		t.Fatalf("layer %d: attention output off the float64 reference by %g", a.layer, worst)
	}
}

// TestBF16SoftmaxMatchesFloat64: bf16Softmax's probabilities are the
// float64 softmax's (scaled scores, the sink in the denominator) within
// bfloat16 rounding, exactly zero for −Inf scores and for scores more
// than 87 below the maximum, and a row's leading and trailing chunks of
// −Inf change no bit of the others.
func TestBF16SoftmaxMatchesFloat64(t *testing.T) {
	needBF16(t)
	rng := rand.New(rand.NewPCG(3, 3))
	inf := float32(math.Inf(-1))
	for _, sink := range []float32{inf, 1.5} {
		const n, first, last = 96, 36, 62 // keys [first, last), in the second chunk of 32
		sc := make([]float32, n)
		for i := range sc {
			sc[i] = inf
			if i >= first && i < last {
				sc[i] = float32(rng.NormFloat64() * 8)
			}
		}
		sc[first] = -1000 // far below the maximum: exactly zero
		in := slices.Clone(sc)
		got := make([]uint16, n)
		bf16Softmax(&got[0], &sc[0], n, 0.5, sink)
		mx := math.Inf(-1)
		for _, s := range in {
			mx = math.Max(mx, 0.5*float64(s))
		}
		mx = math.Max(mx, float64(sink))
		sum := math.Exp(float64(sink) - mx)
		for _, s := range in {
			sum += math.Exp(0.5*float64(s) - mx)
		}
		for i, s := range in {
			want := math.Exp(0.5*float64(s)-mx) / sum
			g := float64(bf16(got[i]))
			if (s == inf || i == first) && g != 0 {
				t.Fatalf("sink %g: column %d: %g, want exactly 0", sink, i, g)
			}
			if math.Abs(g-want) > want/128+1e-30 {
				t.Fatalf("sink %g: column %d: %g, want %g", sink, i, g, want)
			}
		}
		// The same keys alone in their chunk: the same bits.
		alone := make([]uint16, 32)
		bf16Softmax(&alone[0], &slices.Clone(in[32:64])[0], 32, 0.5, sink)
		if !slices.Equal(alone, got[32:64]) {
			t.Fatalf("sink %g: chunks of −Inf around the keys changed the probabilities", sink)
		}
	}
}
