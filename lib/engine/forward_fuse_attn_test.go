package engine

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestDecodeFuseAttnShareSameBits decodes steps of 16 rows at positions
// 60-100 fused with the attention cut into rows (fuseAttnShare), fused
// with a KV head's rows on one core, and unfused: every logit and cached
// value must have the same bits.
func TestDecodeFuseAttnShareSameBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer func(v, l, k, h, s bool, n int) {
		decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare, fuseMaxRows = v, l, k, h, s, n
	}(decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare, fuseMaxRows)
	fuseMaxRows = 16
	for _, arch := range []models.Family{models.Qwen3, models.GptOss} {
		m, _ := fuseTestModel(t, arch, "f32", "fuse-share-"+string(arch), 13, 5)
		run := func(fused, share bool) (logits, caches []float32) {
			decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare = fused, fused, fused, fused, share
			ws := &workspace{}
			seqs := make([]*kvCache, 16)
			for s := range seqs {
				seqs[s] = m.newCache(104)
				var rows []row
				for p := range 60 + 3*s {
					rows = append(rows, row{seq: seqs[s], token: (7*p + s) % m.cfg.VocabSize, pos: p})
				}
				m.forward(ws, rows)
			}
			for step := range 4 {
				rows := make([]row, len(seqs))
				for s := range rows {
					rows[s] = row{seq: seqs[s], token: (13*step + 3*s) % m.cfg.VocabSize, pos: seqs[s].n, logits: true}
				}
				for _, l := range m.forward(ws, rows) {
					logits = append(logits, l...)
				}
			}
			caches = cachedValues(seqs)
			return logits, caches
		}
		wantL, wantC := run(false, false)
		for _, share := range []bool{false, true} {
			l, c := run(true, share)
			name := fmt.Sprintf("%s fused, share %v", arch, share)
			fuseSameBits(t, name+" logits", wantL, l)
			fuseSameBits(t, name+" caches", wantC, c)
		}
	}
}

// TestDecodeFuseAttnBlockedSameBits decodes steps of 1, 2, 3, 5 and 16
// rows fused with blocked attention units (fuseAttnBlocked, its position
// floor lowered to reach it), on heads of 128 with groups of 2 and 4 and
// 2 or 4 KV heads (one to four units a row), GPT-OSS's sinks and window
// among them, and unfused: every logit and cached value must have the
// same bits.
func TestDecodeFuseAttnBlockedSameBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer func(v, l, k, h, s, b bool, n, p int) {
		decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare, fuseAttnBlocked, fuseMaxRows, attnBlockedMinPos = v, l, k, h, s, b, n, p
	}(decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare, fuseAttnBlocked, fuseMaxRows, attnBlockedMinPos)
	fuseMaxRows, attnBlockedMinPos = 16, 40
	for _, arch := range []models.Family{models.Qwen3, models.GptOss} {
		for _, sh := range [][2]int{{4, 2}, {8, 2}, {8, 4}} {
			m := blockedAttnModel(t, arch, sh, "fuse-blocked", 19)
			run := func(fused bool) (logits, caches []float32) {
				decodeFuse, fuseLayer, fuseToken, fuseHead, fuseAttnShare, fuseAttnBlocked = fused, fused, fused, fused, true, true
				return blockedAttnDecode(m, 7, 13)
			}
			wantL, wantC := run(false)
			l, cs := run(true)
			name := fmt.Sprintf("%s %v", arch, sh)
			fuseSameBits(t, name+" logits", wantL, l)
			fuseSameBits(t, name+" caches", wantC, cs)
		}
	}
}

// TestAttendClaimsOnce has two cores claim a layer's attention rows
// (attendClaims) at once, every group finished: each row's KV head must
// be attended exactly once, on a scratch no other core holds, with
// attendRow's bits, and the last one must open o's phase.
func TestAttendClaimsOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer func(s bool) { fuseAttnShare = s }(fuseAttnShare)
	fuseAttnShare = true
	m, c := fuseTestModel(t, models.Qwen3, "f32", "fuse-claims", 17, 5)
	const n = 16
	qd, kvd := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
	rows := make([]row, n)
	for s := range rows {
		pos := 40 + 5*s
		seq := m.newCache(pos + 1)
		for l := range seq.k {
			fill(seq.k[l][:(pos+1)*kvd], newRNG(uint64(100+s*10+l)), 1)
			fill(seq.v[l][:(pos+1)*kvd], newRNG(uint64(200+s*10+l)), 1)
		}
		seq.n = pos + 1
		rows[s] = row{seq: seq, pos: pos}
	}
	randRows := func(n, width int, seed uint64) [][]float32 {
		r, xs := newRNG(seed), make([][]float32, n)
		for i := range xs {
			xs[i] = make([]float32, width)
			fill(xs[i], r, 1)
		}
		return xs
	}
	q := randRows(n, qd, 3)
	want := &workspace{q: q, att: randRows(n, qd, 4)}
	want.scores = growTo(want.scores, 1)
	for i := range rows {
		m.attendRow(want, rows, i, 0, 0, 0, c.KVHeads)
	}
	ws := &workspace{q: q, att: randRows(n, qd, 5)}
	ws.x, ws.k, ws.v, ws.g, ws.u = randRows(n, c.Hidden, 6), randRows(n, kvd, 7), randRows(n, kvd, 8), randRows(n, c.Intermediate, 9), randRows(n, c.Intermediate, 10)
	f := ws.fuse(m, rows, randRows(n, c.Hidden, 11), 0, fuseK, fuseDown)
	f.attend = true
	ws.shareSlots(c.KVHeads)
	full := int32(2 + c.Heads/c.KVHeads)
	for kvh := range c.KVHeads {
		f.at(0, f.groups+kvh).Store(full)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for kvh := range c.KVHeads {
				f.attendClaims(0, kvh)
			}
		})
	}
	wg.Wait()
	if got := f.at(0, f.attended).Load(); got != int32(c.KVHeads*n) {
		t.Fatalf("attended %d rows' KV heads, want %d", got, c.KVHeads*n)
	}
	if f.ready[1].Load() != 1 {
		t.Fatal("the last row attended did not open o's phase")
	}
	for kvh := range c.KVHeads {
		if got := f.at(0, f.groups+kvh).Load(); got < full+n || got > full+n+2 {
			t.Fatalf("group %d's counter %d: want %d claims past its heads and at most one failed claim a core", kvh, got-full, n)
		}
	}
	for s := range ws.scoreBusy {
		if ws.scoreBusy[s].Load() {
			t.Fatalf("scratch %d still claimed", s)
		}
	}
	fuseSameBits(t, "attention rows", slices.Concat(want.att...), slices.Concat(ws.att...))
}

// blockedAttnModel is the blocked-attention tests' model: three layers
// of heads of 128, sh's query and KV heads, GPT-OSS with a sliding layer
// beside its sinks.
func blockedAttnModel(t *testing.T, arch models.Family, sh [2]int, name string, seed uint64) *Model {
	t.Helper()
	c := smallConfig(arch)
	if arch == models.GptOss {
		c = gptOssConfig()
		c.LayerTypes = append(c.LayerTypes, "sliding_attention")
	}
	c.Hidden, c.Intermediate, c.Heads, c.KVHeads, c.HeadDim, c.VocabSize, c.Layers = 256, 512, sh[0], sh[1], 128, 300, 3
	m, err := New(fmt.Sprintf("%s-%s-%d-%d", name, arch, sh[0], sh[1]), c, randomTensors(c, seed))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// blockedAttnDecode prefills 16 sequences of 41-71 positions (tokens
// from mul) and decodes steps of 1, 2, 3, 5 and 16 rows (tokens from
// step), returning every step's logits and every cached value.
func blockedAttnDecode(m *Model, mul, step int) (logits, caches []float32) {
	vocab := m.cfg.VocabSize
	ws := &workspace{}
	seqs := make([]*kvCache, 16)
	for s := range seqs {
		seqs[s] = m.newCache(80)
		var rows []row
		for p := range 41 + 2*s {
			rows = append(rows, row{seq: seqs[s], token: (mul*p + s) % vocab, pos: p})
		}
		m.forward(ws, rows)
	}
	for k, r := range []int{1, 2, 3, 5, 16} {
		rows := make([]row, r)
		for s := range rows {
			rows[s] = row{seq: seqs[s], token: (step*k + 3*s) % vocab, pos: seqs[s].n, logits: true}
		}
		for _, l := range m.forward(ws, rows) {
			logits = append(logits, l...)
		}
	}
	return logits, cachedValues(seqs)
}
