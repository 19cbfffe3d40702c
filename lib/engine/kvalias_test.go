package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// aliasAll makes tiny models' prompts alias (their caches are a few pages)
// for the test and restores the switches after.
func aliasAll(t *testing.T) {
	t.Helper()
	minBytes, fail, limit := kvAliasMinBytes, kvAliasFail, kvAliasLimit()
	t.Cleanup(func() { kvAliasPrefix, kvAliasMinBytes, kvAliasFail, kvAliasMapLimit = true, minBytes, fail, limit })
	kvAliasPrefix, kvAliasMinBytes = true, 1
	if limit == 0 {
		t.Skip("no prompt aliasing on this system")
	}
}

// aliasCalls are requests sharing one prompt of n tokens: several with
// num_samples > 1, and single ones that follow the first.
func aliasCalls(m *Model, n int) []call {
	p := spreadPrompt(m, n, 7, 3)
	return []call{
		{m, SampleRequest{Prompt: p, MaxTokens: 9, Temperature: 1, Seed: seedp(41), NumSamples: 4}},
		{m, SampleRequest{Prompt: p, MaxTokens: 5, Temperature: 0.7, Seed: seedp(42)}},
		{m, SampleRequest{Prompt: p, MaxTokens: 12, Temperature: 1.1, Seed: seedp(43), NumSamples: 3, TopK: 9}},
		{m, SampleRequest{Prompt: p, MaxTokens: 3, Temperature: 1, Seed: seedp(44)}},
		{m, SampleRequest{Prompt: p, MaxTokens: 7, Temperature: 0}},
	}
}

// waitReleased checks that no aliased cache's mapping is left once the
// batch is done (its stepper has released every job's caches and ended),
// nor one in m's pool.
func waitReleased(t *testing.T, m *Model, label string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
		m.batch.mu.Lock()
		running := m.batch.running
		m.batch.mu.Unlock()
		if !running {
			break
		}
	}
	if n := kvAliasMaps.Load(); n != 0 {
		t.Errorf("%s: %d mappings of aliased caches left after every request returned", label, n)
	}
	pool := m.kvPool()
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for _, c := range pool.free {
		if c.alias != nil || c.aliasSrc != nil {
			t.Errorf("%s: the pool holds an aliased cache or a prompt's memory file", label)
		}
	}
}

// TestKVAliasSameBits: samples of one prompt (num_samples and followers)
// whose caches alias the prompt's memory file (prompts of 40 and 150
// positions: some layer arrays a page or two and a copied tail, others
// several pages) give, bit for bit, what their copies give, and each
// request its solo result; every mapping is released at the end.
func TestKVAliasSameBits(t *testing.T) {
	aliasAll(t)
	for _, name := range testModels(t) {
		m := mustLoad(t, name)
		for _, n := range []int{40, 150} {
			calls := aliasCalls(m, n)
			kvAliasPrefix = false
			solo := make([]*SampleResponse, len(calls))
			for i, c := range calls {
				solo[i] = sample(t, c.m, c.req)
			}
			copied, _ := sampleQueued(t, m, calls)
			sameAsSolo(t, name+" copies", solo, copied)
			kvAliasPrefix = true
			rows0 := kvAliasRows.Load()
			got, _ := sampleQueued(t, m, calls)
			sameAsSolo(t, name+" aliased", solo, got)
			// 4 + 3 samples of the leaders and the three followers.
			if k := kvAliasRows.Load() - rows0; k != 10 {
				t.Errorf("%s: prompt of %d: %d caches aliased, want 10", name, n, k)
			}
			waitReleased(t, m, name)
			// A single sample leads: it decodes in the prompt's cache
			// while the others map the file made from it.
			first := []int{1, 0, 2, 3, 4}
			rows0 = kvAliasRows.Load()
			got, _ = sampleQueued(t, m, permute(calls, first))
			sameAsSolo(t, name+" aliased, single leader", permute(solo, first), got)
			if k := kvAliasRows.Load() - rows0; k != 9 {
				t.Errorf("%s: prompt of %d, single leader: %d caches aliased, want 9", name, n, k)
			}
			waitReleased(t, m, name+" single leader")
		}
	}
}

// TestKVAliasFallback: when mapping fails (forced), or the mappings'
// bound leaves room for only some rows, samples copy their prompts and
// still give their solo results.
func TestKVAliasFallback(t *testing.T) {
	aliasAll(t)
	m := mustLoad(t, testModels(t)[0])
	calls := aliasCalls(m, 80)
	kvAliasPrefix = false
	solo := make([]*SampleResponse, len(calls))
	for i, c := range calls {
		solo[i] = sample(t, c.m, c.req)
	}
	kvAliasPrefix, kvAliasFail = true, true
	rows0 := kvAliasRows.Load()
	got, _ := sampleQueued(t, m, calls)
	sameAsSolo(t, "mapping fails", solo, got)
	if k := kvAliasRows.Load() - rows0; k != 0 {
		t.Errorf("mapping fails: %d caches aliased", k)
	}
	waitReleased(t, m, "mapping fails")

	kvAliasFail = false
	kvAliasMapLimit = int64(3 * (4*m.cfg.Layers + 1)) // three rows' mappings
	rows0 = kvAliasRows.Load()
	got, _ = sampleQueued(t, m, calls)
	sameAsSolo(t, "mapping bound", solo, got)
	if k := kvAliasRows.Load() - rows0; k < 1 || k > 3 {
		t.Errorf("mapping bound of three rows: %d caches aliased", k)
	}
	waitReleased(t, m, "mapping bound")
}

// aliasSource is a cache of n positions of seeded values on m's shape.
func aliasSource(m *Model, n int) *kvCache {
	kw, vw := m.cfg.cacheWidths()
	c := &kvCache{k: make([][]float32, m.cfg.Layers), v: make([][]float32, m.cfg.Layers), kw: kw, vw: vw}
	c.reserve(n)
	for l := range c.k {
		aliasFill(c.k[l][:n*kw], uint64(3+l), 1)
		aliasFill(c.v[l][:n*vw], uint64(9+l), 1)
	}
	c.n = n
	return c
}

// processMaps is the number of the process's mappings.
func processMaps(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip("no /proc/self/maps")
	}
	return bytes.Count(b, []byte("\n"))
}

// aliasFill fills xs with values in (-a, a) from seed.
func aliasFill(xs []float32, seed uint64, a float32) {
	r := rand.New(rand.NewPCG(seed, 77))
	for i := range xs {
		xs[i] = (2*r.Float32() - 1) * a
	}
}

// sameCache reports whether a's and b's first n positions hold the same
// bits.
func sameCache(a, b *kvCache, n int) bool {
	for l := range a.k {
		if !slices.Equal(a.k[l][:n*a.kw], b.k[l][:n*b.kw]) || !slices.Equal(a.v[l][:n*a.vw], b.v[l][:n*b.vw]) {
			return false
		}
	}
	return true
}

// TestKVAliasRows: caches aliasing one source hold its values; one grown
// past its capacity (reserve) keeps them in memory of its own; a write
// into a shared page changes that row only (the mapping is private); the
// pool never keeps an aliased cache; and rows released in any order,
// while others still read, leave the others' values intact and no
// mapping behind.
func TestKVAliasRows(t *testing.T) {
	aliasAll(t)
	m := mustLoad(t, testModels(t)[0])
	const n = 300
	src := aliasSource(m, n)
	ref := src.clone(n, n, nil)
	a := src.aliasFor(n)
	if a == nil {
		t.Fatal("no aliasing source for a 300-position prompt")
	}
	rows := make([]*kvCache, 12)
	maps0 := processMaps(t)
	var wg sync.WaitGroup
	for i := range rows {
		wg.Go(func() { rows[i] = src.cloneAliased(a, n, n+2, n+40, nil) })
	}
	wg.Wait()
	// The mappings the rows count against kvAliasMapLimit bound those
	// they make (a few more may come and go with the runtime's own).
	if got, bound := processMaps(t)-maps0, int(kvAliasMaps.Load()); got > bound+8 {
		t.Errorf("%d rows made %d mappings, counted %d", len(rows), got, bound)
	}
	for i, r := range rows {
		if r.alias == nil {
			t.Fatalf("row %d did not alias", i)
		}
		if !sameCache(r, ref, n) || r.n != n || r.size() != n+40 {
			t.Fatalf("row %d: %d positions of room %d, or other values than its source's", i, r.n, r.size())
		}
	}
	// Generated positions go to each row's own memory.
	for i, r := range rows[:4] {
		for l := range r.k {
			aliasFill(r.k[l][n*r.kw:(n+30)*r.kw], uint64(100+i), 1)
		}
		r.n = n + 30
	}
	// Growth copies into the heap, values kept.
	g := rows[0]
	want := g.clone(g.n, g.n, nil)
	g.reserve(n + 100)
	if !sameCache(g, want, g.n) || g.size() < n+100 {
		t.Fatal("an aliased cache grown past its room lost values")
	}
	// A write into a shared page (which nothing does) is the row's own.
	rows[1].k[0][0] += 1
	rows[1].v[m.cfg.Layers-1][1] -= 1
	for i, r := range rows[2:] {
		if !sameCache(r, ref, n) {
			t.Fatalf("a write into row 1's shared page changed row %d", i+2)
		}
	}
	var pool kvPool
	pool.budget = &kvBudget{limit: 1 << 40}
	order := rand.New(rand.NewPCG(1, 2)).Perm(len(rows))
	for k, i := range order {
		pool.put(rows[i])
		if rows[i].alias != nil || rows[i].k != nil {
			t.Fatalf("row %d put: still mapped", i)
		}
		for _, j := range order[k+1:] {
			if j > 1 && !sameCache(rows[j], ref, n) {
				t.Fatalf("releasing row %d changed row %d", i, j)
			}
		}
	}
	if len(pool.free) != 0 {
		t.Errorf("the pool kept %d aliased caches", len(pool.free))
	}
	src.dropAlias()
	if k := kvAliasMaps.Load(); k != 0 {
		t.Errorf("%d mappings left", k)
	}
	// A row made after its source let go of the file copies.
	if r := src.cloneAliased(a, n, n+2, n+40, nil); r.alias != nil || !sameCache(r, ref, n) {
		t.Errorf("a row made after the source's file closed: aliased %v", r.alias != nil)
	}
}

// TestKVAliasCleanup: an aliased cache lost without being put (a bug
// elsewhere) has its mapping released once it is unreachable.
func TestKVAliasCleanup(t *testing.T) {
	aliasAll(t)
	m := mustLoad(t, testModels(t)[0])
	src := aliasSource(m, 200)
	a := src.aliasFor(200)
	func() {
		r := src.cloneAliased(a, 200, 202, 202, nil)
		if r.alias == nil {
			t.Fatal("the row did not alias")
		}
	}()
	src.dropAlias()
	// Cleanups run after a collection finds the cache unreachable, on
	// their own goroutine: a bounded number of rounds, not a time.
	for range 200 {
		if kvAliasMaps.Load() == 0 {
			break
		}
		runtime.GC()
		runtime.Gosched()
	}
	if k := kvAliasMaps.Load(); k != 0 {
		t.Errorf("%d mappings of an unreachable cache left", k)
	}
}

// TestKVAliasStrictCommit: where the system commits what is reserved
// (vm.overcommit_memory 2, kvAliasStrict), an aliasing row reserves the
// room a copy has, not room for the positions it may generate; otherwise
// the extra room is there.
func TestKVAliasStrictCommit(t *testing.T) {
	aliasAll(t)
	defer func(s bool) { kvAliasStrict = s }(kvAliasStrict)
	m := mustLoad(t, testModels(t)[0])
	const n = 300
	src := aliasSource(m, n)
	a := src.aliasFor(n)
	if a == nil {
		t.Fatal("no aliasing source for a 300-position prompt")
	}
	for _, strict := range []bool{false, true} {
		kvAliasStrict = strict
		r := src.cloneAliased(a, n, n+2, n+400, nil)
		if r.alias == nil {
			t.Fatalf("strict=%v: the row did not alias", strict)
		}
		want := n + 400
		if strict {
			want = n + 2
		}
		if r.size() != want {
			t.Errorf("strict=%v: room for %d positions, want %d", strict, r.size(), want)
		}
		r.dropAlias()
	}
}

// TestKVAliasPromptCache: a num_samples prompt cache large enough to
// alias is its memory file's mapping (kvAliasLeader): what a prefill
// writes into it is what rows made from it hold, the copy a failed row
// makes too; with mapping refused, or kvAliasLeader off, it is a heap
// cache as before; put, it is released, never pooled.
func TestKVAliasPromptCache(t *testing.T) {
	aliasAll(t)
	defer func(l bool) { kvAliasLeader = l }(kvAliasLeader)
	m := mustLoad(t, testModels(t)[0])
	const n = 300
	ref := aliasSource(m, n)
	var pool kvPool
	pool.budget = &kvBudget{limit: 1 << 40}
	prompts0 := kvAliasPrompts.Load()
	c := m.promptCache(n)
	if c.alias == nil || c.aliasSrc == nil || c.aliasSrc.file == nil || c.size() != n {
		t.Fatalf("a %d-position prompt cache is not its memory file's mapping of room %d", n, n)
	}
	// As a prefill writes it.
	for l := range c.k {
		copy(c.k[l], ref.k[l][:n*c.kw])
		copy(c.v[l], ref.v[l][:n*c.vw])
	}
	c.n = n
	a := c.aliasFor(n)
	if a != c.aliasSrc {
		t.Fatal("the prompt cache's own file is not its aliasing source")
	}
	c.samplesStarted(a, n)
	rows := []*kvCache{c.cloneAliased(a, n, n+2, n+20, nil), c.cloneAliased(a, n, n+2, n+20, nil)}
	kvAliasFail = true
	rows = append(rows, c.cloneAliased(a, n, n+2, n+20, nil)) // a copy of the mapping
	kvAliasFail = false
	for i, r := range rows {
		if (r.alias != nil) != (i < 2) || !sameCache(r, ref, n) {
			t.Errorf("row %d (aliased %v) holds other values than the prefill wrote", i, r.alias != nil)
		}
	}
	for _, r := range append(rows, c) {
		pool.put(r)
	}
	if len(pool.free) != 1 || pool.free[0] != rows[2] {
		t.Errorf("the pool holds %d caches, want the copy alone", len(pool.free))
	}
	if k := kvAliasMaps.Load(); k != 0 {
		t.Errorf("%d mappings left", k)
	}
	if k := kvAliasPrompts.Load() - prompts0; k != 1 {
		t.Errorf("%d prompt caches mapped, want 1", k)
	}
	kvAliasFail = true
	if c := m.promptCache(n); c.alias != nil || c.aliasSrc != nil || c.size() < n {
		t.Error("with mapping refused: the prompt cache is not a heap cache")
	}
	kvAliasFail, kvAliasLeader = false, false
	if c := m.promptCache(n); c.alias != nil || c.aliasSrc != nil || c.size() < n {
		t.Error("with kvAliasLeader off: the prompt cache is not a heap cache")
	}
}

// TestKVAliasLateFollower: requests with the prompt of a num_samples job
// that arrive after its samples started (its prompt cache the memory
// file's mapping, its bf16 copy gone) follow it and get their solo
// results; every sample's cache aliases.
func TestKVAliasLateFollower(t *testing.T) {
	aliasAll(t)
	for _, name := range testModels(t) {
		for _, samples := range []int{3, 1} {
			lateFollowerSameBits(t, mustLoad(t, name), name, false, samples)
		}
	}
}

// lateFollowerSameBits is TestKVAliasLateFollower on m, the leader
// asking for samples (1: it decodes in its cache, whose prompt pages
// become the file's as the followers start: kvAliasLeaderSingle); bf16:
// also every follower's bf16 copy mapped.
func lateFollowerSameBits(t *testing.T, m *Model, name string, bf16 bool, samples int) {
	t.Helper()
	name = fmt.Sprintf("%s, leader of %d samples", name, samples)
	p := spreadPrompt(m, 150, 5, 1)
	lead := SampleRequest{Prompt: p, MaxTokens: 10, Temperature: 1, Seed: seedp(61), NumSamples: samples}
	late := []SampleRequest{
		{Prompt: p, MaxTokens: 6, Temperature: 0.9, Seed: seedp(62)},
		{Prompt: p, MaxTokens: 5, Temperature: 1, Seed: seedp(63), NumSamples: 2, TopK: 11},
	}
	kvAliasPrefix = false
	want := sample(t, m, lead)
	solo := make([]*SampleResponse, len(late))
	for i, r := range late {
		solo[i] = sample(t, m, r)
	}
	kvAliasPrefix = true
	got := make([]*SampleResponse, len(late))
	var wg sync.WaitGroup
	var once sync.Once
	lead.StopFunc = func(gen []int) bool {
		if len(gen) == 2 {
			once.Do(func() {
				for i, r := range late {
					wg.Go(func() { got[i], _ = m.Sample(context.Background(), r) })
				}
				waitQueued(t, m.batch, len(late))
			})
		}
		return false
	}
	rows0, bf0, prompts0, remapped0, rowsRun0 := kvAliasRows.Load(), kvAliasRowsBF16.Load(), kvAliasPrompts.Load(), kvAliasRemapped.Load(), m.batch.rows.Load()
	r := sample(t, m, lead)
	wg.Wait()
	if d := sameResponse(want, r); d != "" {
		t.Errorf("%s: the leader differs from its run with copies: %s", name, d)
	}
	run := int64(len(p)) + decodeRows(r) + sameAsSolo(t, name+" late followers", solo, got)
	if n := m.batch.rows.Load() - rowsRun0; n != run {
		t.Errorf("%s: %d rows ran, want %d (the prompt once)", name, n, run)
	}
	// The num_samples leader's cache is the file's from the start; the
	// single one's prompt pages become the file's.
	single := int64(0)
	if samples == 1 {
		single = 1
	}
	if k, k1 := kvAliasPrompts.Load()-prompts0, kvAliasRemapped.Load()-remapped0; k != 1-single || k1 != single {
		t.Errorf("%s: %d prompt caches mapped, %d remapped, want %d and %d", name, k, k1, 1-single, single)
	}
	rows := int64(samples) - single + 3
	if k := kvAliasRows.Load() - rows0; k != rows {
		t.Errorf("%s: %d caches aliased, want %d", name, k, rows)
	}
	if k, w := kvAliasRowsBF16.Load()-bf0, map[bool]int64{false: 0, true: rows}[bf16]; k != w {
		t.Errorf("%s: %d bf16 copies mapped, want %d", name, k, w)
	}
	waitReleased(t, m, name+" late followers")
}

// TestKVAliasOwnCache: a single sample's cache for a prompt large enough
// to alias is memory outside the heap with room for what it may
// generate (kvAliasLeaderSingle); when a follower starts from it, its
// prompt's whole pages become the memory file's (remapPrompt) with every
// value kept, its own later positions included, and what it writes
// after stays its own; one grown out of that memory (reserve) is not
// remapped; where reserving commits (kvAliasStrict), or with the switch
// off, it is a heap cache.
func TestKVAliasOwnCache(t *testing.T) {
	aliasAll(t)
	defer func(s bool) { kvAliasLeaderSingle = s }(kvAliasLeaderSingle)
	m := mustLoad(t, testModels(t)[0])
	const n = 300
	ref := aliasSource(m, n+40)
	fill := func(c *kvCache, to int) {
		for l := range c.k {
			copy(c.k[l][:to*c.kw], ref.k[l])
			copy(c.v[l][:to*c.vw], ref.v[l])
		}
		c.n = to
	}
	remapped0 := kvAliasRemapped.Load()
	c := m.sampleCache(n, n+10, n+100)
	if c.alias == nil || !c.alias.own || c.size() != n+100 {
		t.Fatalf("a %d-position prompt's cache: own memory %v, room %d, want %d", n, c.alias != nil, c.size(), n+100)
	}
	fill(c, n+5) // the prompt and five generated positions
	a := c.aliasFor(n)
	c.followed(a, n)
	if k := kvAliasRemapped.Load() - remapped0; k != 1 || c.alias.own {
		t.Fatalf("%d caches remapped, want 1", k)
	}
	if !sameCache(c, ref, n+5) {
		t.Fatal("the remapped cache lost values")
	}
	row := c.cloneAliased(a, n, n+2, n+20, nil)
	if row.alias == nil || !sameCache(row, ref, n) {
		t.Fatal("a row of the remapped cache does not alias or holds other values")
	}
	// The leader decodes on; a write into its prompt's pages (which
	// nothing makes) is its own.
	for l := range c.k {
		copy(c.k[l][(n+5)*c.kw:(n+40)*c.kw], ref.k[l][(n+5)*c.kw:])
		copy(c.v[l][(n+5)*c.vw:(n+40)*c.vw], ref.v[l][(n+5)*c.vw:])
	}
	c.n = n + 40
	x := c.k[0][0]
	c.k[0][0] += 1
	if !sameCache(row, ref, n) {
		t.Error("the leader's writes changed its follower's row")
	}
	c.k[0][0] = x
	if !sameCache(c, ref, n+40) {
		t.Error("the leader's cache lost values")
	}
	// Grown into the heap: not remapped.
	g := m.sampleCache(n, n+10, n+20)
	fill(g, n+20)
	g.reserve(n + 21)
	g.followed(g.aliasFor(n), n)
	if k := kvAliasRemapped.Load() - remapped0; k != 1 || !sameCache(g, ref, n+20) {
		t.Errorf("a cache grown out of its memory: %d remapped in all, values kept %v", k, sameCache(g, ref, n+20))
	}
	var pool kvPool
	for _, x := range []*kvCache{row, c, g} {
		pool.put(x)
	}
	if k := kvAliasMaps.Load(); k != 0 {
		t.Errorf("%d mappings left", k)
	}
	defer func(s bool) { kvAliasStrict = s }(kvAliasStrict)
	for _, off := range []struct {
		label          string
		strict, single bool
	}{{"reserving commits", true, true}, {"switched off", false, false}} {
		kvAliasStrict, kvAliasLeaderSingle = off.strict, off.single
		if h := m.sampleCache(n, n+10, n+100); h.alias != nil || h.size() != n+10 {
			t.Errorf("%s: own memory %v, room %d, want a heap cache of %d", off.label, h.alias != nil, h.size(), n+10)
		}
	}
}
