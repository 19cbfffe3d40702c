package engine

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// kvPool keeps the caches of sequences that finished for the next ones.
// A fresh cache is memory the process has not touched yet, and the Go
// heap holding a model is collected too rarely to hand back freed caches
// before the next request: each position a decoding sequence wrote then
// faulted in a new page per layer for keys and one for values (a
// position's keys are 4 KiB on the Qwen3-0.6B shape), 56 page faults a
// token on the 0.6B shape, at 1.6-11 µs each on this KVM guest
// (2026-11-29), on the core that decodes while the other waits. A reused
// cache is cleared where it was written, so it reads as zero past its
// filled positions as a fresh one does.
//
// What the pools keep is bounded twice: all models' pools together hold
// at most kvPoolBytes (kvBudget), so a server with several models loaded
// keeps no more than one would, and a pool that has not been used for
// kvPoolIdle drops what it holds for the collector to return.
type kvPool struct {
	mu     sync.Mutex
	free   []*kvCache
	bytes  int
	budget *kvBudget // nil: kvPoolBudget, shared by every model
	used   time.Time // last take or put
	sweep  *time.Timer
}

// kvPoolBytes bounds the memory all kvPools keep together: four caches of
// 257 positions on the Qwen3-0.6B shape (57 MiB each), enough for a
// sequence that decodes alone, while the caches of a burst of batched
// requests go back to the collector.
const kvPoolBytes = 256 << 20

// kvPoolIdle is how long a pool keeps its caches without a request
// taking or giving one: long enough to span the gaps of a client that
// samples in a loop, short enough that an idle server gives the memory
// back.
const kvPoolIdle = 30 * time.Second

// kvBudget counts the bytes that pools sharing it hold, up to limit.
type kvBudget struct {
	used  atomic.Int64
	limit int64
}

// kvPoolBudget is the budget of every model's pool.
var kvPoolBudget = kvBudget{limit: kvPoolBytes}

// claim reserves n bytes if they fit under the limit.
func (b *kvBudget) claim(n int) bool {
	if b.used.Add(int64(n)) > b.limit {
		b.used.Add(-int64(n))
		return false
	}
	return true
}

// release returns n bytes claimed before.
func (b *kvBudget) release(n int) { b.used.Add(-int64(n)) }

func (p *kvPool) shared() *kvBudget {
	if p.budget == nil {
		return &kvPoolBudget
	}
	return p.budget
}

// take returns a cleared cache of layers layers of widths kw and vw with
// room for at least n positions, the smallest the pool has, or nil.
func (p *kvPool) take(layers, kw, vw, n int) *kvCache {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	p.used = time.Now()
	best := -1
	for i, c := range p.free {
		if len(c.k) == layers && c.kw == kw && c.vw == vw && c.size() >= n && (best < 0 || c.size() < p.free[best].size()) {
			best = i
		}
	}
	if best < 0 {
		p.mu.Unlock()
		return nil
	}
	c := p.free[best]
	p.free = slices.Delete(p.free, best, best+1)
	p.bytes -= c.bytes()
	p.shared().release(c.bytes())
	p.mu.Unlock()
	for l := range c.k {
		clear(c.k[l][:c.n*c.kw])
		clear(c.v[l][:c.n*c.vw])
	}
	c.n = 0
	return c
}

// put gives c to the pool if the budget has room; nothing else may use c
// after. A cache that maps a prompt's memory file (kvalias.go) is
// released instead: the pool clears what it takes, and other rows share
// those pages.
func (p *kvPool) put(c *kvCache) {
	if c == nil || c.dropAlias() || p == nil || len(c.k) == 0 || c.kw == 0 {
		return
	}
	c.bf16 = nil // the bf16 path's copy is made again when used
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used = time.Now()
	if slices.Contains(p.free, c) || !p.shared().claim(c.bytes()) {
		return
	}
	p.free = append(p.free, c)
	p.bytes += c.bytes()
	if p.sweep == nil {
		p.sweep = time.AfterFunc(kvPoolIdle, func() { p.dropIdle(time.Now()) })
	}
}

// dropIdle lets go of the pool's caches if it has not been used for
// kvPoolIdle at now, or checks again when that much time will have
// passed since its last use.
func (p *kvPool) dropIdle(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if wait := kvPoolIdle - now.Sub(p.used); wait > 0 {
		if p.sweep != nil {
			p.sweep.Reset(wait)
		}
		return
	}
	p.shared().release(p.bytes)
	p.free, p.bytes = nil, 0
	if p.sweep != nil {
		p.sweep.Stop()
		p.sweep = nil
	}
}
