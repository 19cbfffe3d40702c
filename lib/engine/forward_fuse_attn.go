package engine

import (
	"runtime"
	"sync/atomic"
	"time"
)

// fuseAttnShare cuts a fused fork's float32 attention into units of one
// row's KV head that any core may claim, where the core that finished a
// KV head's query, key and value heads attended every row of it. At long
// positions a KV head's rows are most of a layer's time (16 rows at
// position 2048: 32 MiB of cache a head and layer, against a layer's 40
// MB of weights), and the first core to finish a group went on attending
// it while the other took the rest of q's pieces, finished every other
// group and attended each of them alone: one core read most of the cache
// while the other waited for o. Now the core that finishes a group
// claims its rows one at a time (the group's counter counts on past its
// heads: claim k is row k), and a core waiting for o claims rows of
// every finished group (awaitAttending). Each row's head is attendRow's
// same work on its own scratch: the same bits (TestDecodeFuseSameBits,
// TestDecodeFuseAttnShareSameBits). A variable for BenchmarkDecodeLong's
// LONG_SWITCH=share.
var fuseAttnShare = true

// attnShared reports whether layer l's attention in the fork goes by
// row units (fuseAttnShare): the float32 path's.
func (f *fuseState) attnShared(l int) bool { return fuseAttnShare && !f.m.bf16Attention(l) }

// attendedWant is the count of layer l's attended counter at which its
// attention is done: a unit a KV head, or a row's KV head when shared.
func (f *fuseState) attendedWant(l int) int32 {
	if f.attnShared(l) {
		return int32(f.m.cfg.KVHeads * len(f.rows))
	}
	return int32(f.m.cfg.KVHeads)
}

// attendClaims attends the rows of layer l's KV head kvh that no core has
// claimed, one claim a row, once the group's heads are finished (its
// counter at full); it reports whether it attended any. The last row
// attended opens o's phase.
func (f *fuseState) attendClaims(l, kvh int) bool {
	c := f.m.cfg
	full := int32(2 + c.Heads/c.KVHeads)
	n := int32(len(f.rows))
	cnt := f.at(l, f.groups+kvh)
	did := false
	// Load first: a claim past the rows would still count on, and a core
	// polling here would count without bound.
	for v := cnt.Load(); v >= full && v < full+n; v = cnt.Load() {
		i := int(cnt.Add(1) - full - 1)
		if i >= int(n) {
			break
		}
		s := f.ws.scoreSlot()
		f.m.attendRow(f.ws, f.rows, i, l, s, kvh, kvh+1)
		f.ws.scoreBusy[s].Store(false)
		did = true
		if f.at(l, f.attended).Add(1) == f.attendedWant(l) {
			f.open(l, 1)
		}
	}
	return did
}

// awaitAttending returns once the fork's phase k, layer l's o, may start,
// attending unclaimed rows of layer l's finished groups meanwhile.
func (f *fuseState) awaitAttending(l, k int) {
	c := f.m.cfg
	ready := &f.ready[k]
	var t0 time.Time
	for spins := 0; ready.Load() == 0 && !f.failed.Load(); spins++ {
		if spins%64 != 0 {
			continue
		}
		did := false
		for kvh := range c.KVHeads {
			did = f.attendClaims(l, kvh) || did
		}
		switch {
		case did:
			t0 = time.Time{}
		case t0.IsZero():
			t0 = time.Now()
		case time.Since(t0) > fuseWaitSpin:
			time.Sleep(10 * time.Microsecond)
		default:
			runtime.Gosched()
		}
	}
}

// scoreSlot claims a free attention scratch of ws.scores (scoreBusy: the
// fork's cores may attend rows of the same KV head at once), released by
// storing false.
func (ws *workspace) scoreSlot() int {
	for {
		for s := range ws.scoreBusy {
			if ws.scoreBusy[s].CompareAndSwap(false, true) {
				return s
			}
		}
		runtime.Gosched()
	}
}

// shareSlots readies ws.scores and ws.scoreBusy for a fused fork's shared
// attention: a scratch for every core that may attend at once.
func (ws *workspace) shareSlots(kvHeads int) {
	n := max(kvHeads, runtime.GOMAXPROCS(0))
	ws.scores = growTo(ws.scores, n)
	if len(ws.scoreBusy) < n {
		ws.scoreBusy = make([]atomic.Bool, n)
	}
}
