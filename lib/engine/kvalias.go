package engine

import (
	"sync"
	"sync/atomic"
)

// A request's samples (num_samples, and jobs following another's prompt:
// prefixshare.go) start from one prompt cache, and each used to hold its
// own copy of it: at 1024 prompt positions on the Qwen3-0.6B shape that is
// 229 MB a row, and every decoding step reads every row's copy from
// memory. Where the system allows (kvalias_linux.go), the whole pages of
// the prompt's keys and values of each layer are written once to a memory
// file, and every sample's cache maps those same physical pages at the
// start of its layer arrays; the positions past the last whole page, and
// room for the positions the sample generates, are the row's own memory.
// The kernels see the same contiguous arrays holding the same values, so
// no output bit changes. The mapping is private (copy on write): a write
// into the prompt's pages, which nothing does (a sample writes only
// positions past its prompt), would copy the page for that row alone
// rather than change the others'.
//
// A num_samples job's own prompt cache, which only its samples and
// followers start from, is that memory file's mapping itself
// (kvAliasLeader, newKVAliasPromptCache): the prefill writes the file,
// so the prompt is held once rather than a heap copy beside the file for
// as long as followers may come, and nothing is copied at the start. A
// single sample's cache of a prompt that would alias is memory outside
// the heap (kvAliasLeaderSingle, newKVAliasOwnCache), whose prompt pages
// become the file's when the first follower starts (remapPrompt).
//
// A row's mapping is released when its sequence's cache is dropped
// (kvPool.put, which never keeps such a cache), or by a cleanup when the
// cache becomes unreachable without that. Any failure (no memory files,
// the map count bound, mmap errors) falls back to the copy.

// kvAliasPrefix switches prompt aliasing on (a variable so that tests and
// benchmarks compare it with the copy).
var kvAliasPrefix = true

// kvAliasMinBytes is the fewest bytes of whole pages a row must share for
// its cache to alias the prompt's: 32 MiB, 146 positions on the
// Qwen3-0.6B shape. Below about that the steps gain nothing measurable
// (BenchmarkDecodeAlias, 2026-11-30: 1.01-1.06 at 32-128 positions) and
// a row's mappings (a few per layer) cost more than its copy when the
// copy reuses memory the heap holds.
var kvAliasMinBytes = 32 << 20

// kvAliasRoom bounds the positions an aliasing cache reserves address
// space for past its prompt (a sample generating more grows into a copy).
const kvAliasRoom = 32768

// kvAliasStrict is whether the system commits address space as it is
// reserved (vm.overcommit_memory 2, where MAP_NORESERVE is ignored): then
// an aliasing cache reserves only the room a copy would have, since
// reserving kvAliasRoom positions for every row would take from the
// commit limit the memory the Go heap needs. Read with kvAliasMapLimit.
var kvAliasStrict bool

// kvAliasFail makes every mapping attempt fail (tests of the fallback).
var kvAliasFail = false

// kvAliasMaps counts the mappings aliased caches hold now; kvAliasMapLimit
// bounds it well under the kernel's per-process bound (vm.max_map_count,
// 65530 by default), which the Go runtime and the model's files share.
// The bound is read on first use (kvAliasLimit), not at start: every
// `tinker` command links the engine, and most never sample.
var (
	kvAliasMaps      atomic.Int64
	kvAliasMapLimit  = int64(-1) // -1: not read yet
	kvAliasLimitOnce sync.Once
	kvAliasRows      atomic.Int64 // caches made aliasing, ever (tests)
	kvAliasRowsBF16  atomic.Int64 // of those, whose bf16 copy maps the prompt's (tests)
)

// kvAliasBF16 switches on, for aliasing rows of a prompt cache that has
// the bf16 path's copy (kvCache.bf16), that copy mapped from a memory
// file of its own too (kvalias_bf16_linux.go) rather than packed by each
// row; a variable for BenchmarkDecodeAlias's ALIAS_SWITCH=bf16.
var kvAliasBF16 = true

// kvAliasLeader switches on the prompt cache of a num_samples job held
// once: made as a mapping of the memory file its samples map
// (newKVAliasPromptCache, through Model.promptCache) rather than a copy
// in the Go heap beside that file, and its bf16 copy let go once its
// samples start (samplesStarted); a variable so that tests and
// benchmarks compare it with the copy kept.
var kvAliasLeader = true

// kvAliasPrompts counts the prompt caches made as mappings of their
// memory file, ever (tests).
var kvAliasPrompts atomic.Int64

// kvAliasLeaderSingle switches on the same for a single sample's cache,
// which its own sample decodes in and followers may start from: made in
// memory mapped outside the Go heap (newKVAliasOwnCache) when its prompt
// is long enough to alias, so that when the first follower starts, its
// prompt's whole pages become the memory file's (remapPrompt) and its
// own copy of them is freed there and then; a variable so that tests
// and benchmarks compare it with the heap's cache.
var kvAliasLeaderSingle = true

// kvAliasRemapped counts the caches whose prompt pages became their
// memory file's (remapPrompt), ever (tests).
var kvAliasRemapped atomic.Int64

// kvAliasLimit is kvAliasMapLimit, read from the system the first time
// unless set before.
func kvAliasLimit() int64 {
	kvAliasLimitOnce.Do(func() {
		if kvAliasMapLimit < 0 {
			kvAliasMapLimit = int64(kvAliasMapBound())
		}
		kvAliasStrict = kvAliasStrictCommit()
	})
	return kvAliasMapLimit
}

// kvAliasSrc is a prompt cache's first n positions in a memory file, for
// the caches of the samples that start from it; it lives as long as the
// prompt cache that holds it (kvCache.aliasSrc) and is closed when that
// is dropped.
type kvAliasSrc struct {
	once   sync.Once
	n      int
	file   *kvAliasFile // nil: could not be made
	closed atomic.Bool

	bf16Once sync.Once
	bf16     *kvAliasBF16File // the bf16 path's copy (kvalias_bf16_linux.go); nil: none
}

// kvAliasRow is one cache's mapping: released once.
type kvAliasRow struct {
	mem      kvAliasMem
	bf16     *kvAliasMem // the bf16 path's copy's mapping, if mapped
	maps     int64       // both's
	own      bool        // anonymous memory a prompt's file is not mapped into yet (newKVAliasOwnCache)
	released atomic.Bool
}

// release unmaps r; the cache that held it must not be read after.
func (r *kvAliasRow) release() {
	if r == nil || !r.released.CompareAndSwap(false, true) {
		return
	}
	r.mem.unmap()
	if r.bf16 != nil {
		r.bf16.unmap()
	}
	kvAliasMaps.Add(-r.maps)
}

// aliasFor returns the aliasing source of c's first n positions, made on
// first use and kept on c, or nil when caches of n positions should not
// alias (switched off, too small, or a source of another length exists).
// The stepper calls it, never concurrently; the rows' cloneAliased may
// run concurrently.
func (c *kvCache) aliasFor(n int) *kvAliasSrc {
	if !kvAliasPrefix || kvAliasLimit() <= 0 || n > c.n || kvAliasShared(n, c.kw, c.vw, len(c.k)) < kvAliasMinBytes {
		return nil
	}
	if c.aliasSrc == nil {
		c.aliasSrc = &kvAliasSrc{n: n}
	}
	if c.aliasSrc.n != n {
		return nil
	}
	return c.aliasSrc
}

// promptCache is a new cache for a prompt of n positions that only
// samples starting from it will decode from (a num_samples job's): the
// mapping of the memory file they will map when their caches will alias
// it (kvAliasLeader), else newCache's.
func (m *Model) promptCache(n int) *kvCache {
	kw, vw := m.cfg.cacheWidths()
	if kvAliasLeader && kvAliasPrefix && kvAliasLimit() > 0 && kvAliasShared(n, kw, vw, m.cfg.Layers) >= kvAliasMinBytes {
		if c := newKVAliasPromptCache(m.cfg.Layers, kw, vw, n); c != nil {
			kvAliasPrompts.Add(1)
			return c
		}
	}
	return m.newCache(n)
}

// sampleCache is a new cache with room for room positions for a prompt
// of n positions that its single sample decodes in (and followers may
// start from): newKVAliasOwnCache's, with address space for capacity,
// when the prompt would alias (kvAliasLeaderSingle), else newCache's.
func (m *Model) sampleCache(n, room, capacity int) *kvCache {
	kw, vw := m.cfg.cacheWidths()
	if kvAliasLeaderSingle && kvAliasPrefix && kvAliasLimit() > 0 && kvAliasShared(n, kw, vw, m.cfg.Layers) >= kvAliasMinBytes {
		if c := newKVAliasOwnCache(m.cfg.Layers, kw, vw, room, capacity); c != nil {
			return c
		}
	}
	return m.newCache(room)
}

// followed is told that a follower's samples start from c's first n
// positions with the aliasing source a (nil: none). When c is a single
// sample's own memory (sampleCache), the memory file is made now (as the
// first row would have) and c's whole pages of those positions become
// the file's: the same values, and c's own copy of them freed. Called
// between steps: nothing reads or writes c meanwhile.
func (c *kvCache) followed(a *kvAliasSrc, n int) {
	if !kvAliasLeaderSingle || a == nil || a.n != n || n > c.n || c.alias == nil || !c.alias.own {
		return
	}
	a.once.Do(func() { a.file = newKVAliasFile(c, n) })
	if a.file != nil && c.remapPrompt(a.file, n) {
		kvAliasRemapped.Add(1)
	}
}

// samplesStarted is told that the samples of c, a prompt cache that
// nothing computes in again (a num_samples job's: its samples decode in
// caches of their own), start from its first n positions with the
// aliasing source a (nil: none). The source's memory files are made now
// (as the first row would have), and c's bf16 copy, which only the bf16
// file is made from (a clone does not copy it, and a row that maps no
// bf16 file packs its own from its float32 cache), is let go for the
// collector: the prompt's bf16 keys and values are then the file's alone.
func (c *kvCache) samplesStarted(a *kvAliasSrc, n int) {
	if !kvAliasLeader {
		return
	}
	if a != nil && a.n == n && n <= c.n {
		a.once.Do(func() { a.file = newKVAliasFile(c, n) })
		if a.file != nil {
			a.bf16For(c, n)
		}
	}
	c.bf16 = nil
}

// bf16For makes a's bf16 file from c's bf16 copy once, when the rows map
// one (kvAliasBF16) and c has that copy.
func (a *kvAliasSrc) bf16For(c *kvCache, n int) {
	if kvAliasBF16 {
		a.bf16Once.Do(func() {
			if c.bf16 != nil {
				a.bf16 = newKVAliasBF16File(c, n)
			}
		})
	}
}

// kvAliasShared is the bytes a row shares: each layer array's whole pages
// of its first n positions.
func kvAliasShared(n, kw, vw, layers int) int {
	pg := kvAliasPage
	return layers * (n*4*kw/pg*pg + n*4*vw/pg*pg)
}

// cloneAliased is c.clone(n, capacity, pool), its first n positions
// aliasing the memory file of c's source a when that works, with room
// for aliasCap positions then (address space only until written).
func (c *kvCache) cloneAliased(a *kvAliasSrc, n, capacity, aliasCap int, pool *kvPool) *kvCache {
	if a != nil && a.n == n && n <= c.n {
		kvAliasLimit() // reads kvAliasStrict
		if kvAliasStrict {
			aliasCap = capacity
		}
		a.once.Do(func() { a.file = newKVAliasFile(c, n) })
		if a.file != nil {
			if d := a.file.row(c, n, max(capacity, n), max(capacity, aliasCap, n)); d != nil {
				kvAliasRows.Add(1)
				// c's bf16 copy may be gone (samplesStarted) once the file
				// is made from it.
				a.bf16For(c, n)
				if kvAliasBF16 && a.bf16 != nil && a.bf16.row(c, d, n, max(capacity, aliasCap, n)) {
					kvAliasRowsBF16.Add(1)
				}
				return d
			}
		}
	}
	return c.clone(n, capacity, pool)
}

// dropAlias releases what c holds of aliasing: its own mapping (then c
// must not be used again, nor pooled: it reports true) and the memory
// file of its prompt (kept by the rows that map it).
func (c *kvCache) dropAlias() (mapped bool) {
	if s := c.aliasSrc; s != nil {
		c.aliasSrc = nil
		s.close()
	}
	if c.alias == nil {
		return false
	}
	r := c.alias
	c.alias, c.k, c.v, c.n, c.bf16 = nil, nil, nil, 0, nil
	r.release()
	return true
}

// close lets go of the memory file; rows that map it keep its pages.
func (s *kvAliasSrc) close() {
	if s.closed.CompareAndSwap(false, true) {
		s.once.Do(func() {}) // none made after
		s.bf16Once.Do(func() {})
		if s.file != nil {
			s.file.close()
		}
		if s.bf16 != nil {
			s.bf16.close()
		}
	}
}
