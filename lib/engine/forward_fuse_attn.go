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

// fuseAttnBlocked has a shared attention (fuseAttnShare) whose rows are
// all at attnBlockedMinPos or past it go by units of a row's several KV
// heads, attended a block of positions at a time (attendRowBlocked), once
// every KV head's query, key and value heads are finished: read across
// the heads, a position's keys and values come in address order, where a
// head at a time read them at about a third of the read probe's pace.
// The units start only after q's last piece (a head at a time, the first
// started while q streamed). A variable for BenchmarkDecodeLong's
// LONG_SWITCH=blocked.
var fuseAttnBlocked = true

// attnBlockedMinPos is the least position of every row of a fork (or of
// a lone row, attnBlockedRows) at which blocked units apply. Step-paired
// against 512 (LONG_SWITCH=minpos), from 256 1.02-1.21 at positions 256
// and 384, from 0 0.99-1.03 at 16 and 64 and 1.01-1.08 at 128 (1, 4 and
// 16 rows): 128 keeps the short contexts' steps as they were. A variable
// so the tests reach it with short caches.
var attnBlockedMinPos = 128

// attnChunks is how many units each row's attention of layer l is cut
// into when blocked (fuseAttnBlocked), 0 when not: the fewest that
// divide the KV heads and give every core two units.
func (f *fuseState) attnChunks(l int) int {
	if !fuseAttnBlocked || !f.attnShared(l) || len(f.rows) == 0 {
		return 0
	}
	for _, r := range f.rows {
		if r.pos < attnBlockedMinPos {
			return 0
		}
	}
	return blockedChunks(f.m.cfg.KVHeads, len(f.rows))
}

// blockedChunks is how many units each of rows rows' attention is cut
// into by KV heads when blocked: the fewest that divide the KV heads and
// give every core two units.
func blockedChunks(kvHeads, rows int) int {
	for n := max(1, (2*runtime.GOMAXPROCS(0)+rows-1)/rows); n < kvHeads; n++ {
		if kvHeads%n == 0 {
			return n
		}
	}
	return kvHeads
}

// attnWholeRows has a fork of fewer rows than twice the cores cut its
// blocked units into whole rows (every KV head) while the rows left are
// at least the cores, the rows after them in as many parts as make their
// units a multiple of the cores (wholeRowsSplit), where blockedChunks
// cut every row alike into enough units for two a core: two rows went as
// four units of half a row's KV heads, now as two whole rows; three rows
// as six halves, now two whole rows and two halves; one row as four
// quarters, now two halves. A part of a row's heads reads part of each
// position's keys and values (a 4 KiB page on the 0.6B shape) and
// another core the rest at another time; a whole row reads each page
// once. Step-paired at position 2048 with the other core contended
// (medians of runs): 2 rows 1.10 (1.06-1.14), 3 rows 1.04 (1.00-1.09),
// 1 row 1.03 (1.01-1.10); positions 128-1024 0.98-1.07. Quiet, it is
// level (0.99-1.03, docs/engine-decoding.md, "Whole rows a unit below
// two rows a core (attnWholeRows)"). From twice
// the cores on blockedChunks' units are whole rows already; cutting an
// odd count's last row in two read 0.98-1.02 at 5 and 7 rows and was
// left. A variable for BenchmarkDecodeLong's LONG_SWITCH=whole.
var attnWholeRows = true

// blockedSplit is how a fork's rows' attention is cut into blocked
// units: the first whole rows a unit each (every KV head), then each row
// after them parts units of kvHeads/parts KV heads. Units are claimed in
// that order, whole rows first. The zero value: no blocked units.
type blockedSplit struct{ rows, whole, parts, kvHeads int }

// units is how many units the rows are cut into.
func (b blockedSplit) units() int { return b.whole + (b.rows-b.whole)*b.parts }

// unit is unit u's row and KV heads [kv0, kv1).
func (b blockedSplit) unit(u int) (i, kv0, kv1 int) {
	if u < b.whole {
		return u, 0, b.kvHeads
	}
	u -= b.whole
	hpu := b.kvHeads / b.parts
	ch := u % b.parts
	return b.whole + u/b.parts, ch * hpu, (ch + 1) * hpu
}

// attnSplit is layer l's blocked units (attnChunks), the zero
// blockedSplit when it has none.
func (f *fuseState) attnSplit(l int) blockedSplit {
	n := f.attnChunks(l)
	if n == 0 {
		return blockedSplit{}
	}
	kvh, rows, procs := f.m.cfg.KVHeads, len(f.rows), runtime.GOMAXPROCS(0)
	if attnWholeRows && rows < 2*procs {
		if s, ok := wholeRowsSplit(kvh, rows, procs); ok {
			return s
		}
	}
	return blockedSplit{rows: rows, parts: n, kvHeads: kvh}
}

// wholeRowsSplit is attnWholeRows' units of rows rows over procs cores:
// rows − rows%procs whole rows, the rest each cut into the fewest parts
// (dividing the KV heads) that make their units a multiple of the cores.
// It reports false where no such parts exist.
func wholeRowsSplit(kvHeads, rows, procs int) (blockedSplit, bool) {
	whole := rows - rows%procs
	rest := rows - whole
	if rest == 0 {
		return blockedSplit{rows: rows, whole: whole, parts: 1, kvHeads: kvHeads}, true
	}
	for n := 2; n <= kvHeads; n++ {
		if kvHeads%n == 0 && rest*n%procs == 0 {
			return blockedSplit{rows: rows, whole: whole, parts: n, kvHeads: kvHeads}, true
		}
	}
	return blockedSplit{}, false
}

// attendedWant is the count of layer l's attended counter at which its
// attention is done: a unit a KV head, or a row's KV head when shared;
// blocked, a count a KV head's group finished and one a unit.
func (f *fuseState) attendedWant(l int) int32 {
	kvh := f.m.cfg.KVHeads
	if b := f.attnSplit(l); b.rows > 0 {
		return int32(kvh + b.units())
	}
	if f.attnShared(l) {
		return int32(kvh * len(f.rows))
	}
	return int32(kvh)
}

// groupDone attends what KV head kvh's finished group lets this core
// attend in layer l: its rows (attendClaims), or once every group is
// finished, blocked units (attendUnits).
func (f *fuseState) groupDone(l, kvh int) {
	if b := f.attnSplit(l); b.rows > 0 {
		f.at(l, f.attended).Add(1)
		f.attendUnits(l, b)
		return
	}
	f.attendClaims(l, kvh)
}

// attendUnits attends layer l's blocked units (b) that no core has
// claimed, once every group is finished (the attended counter at the KV
// heads); it reports whether it attended any. Claims count on group 0's
// counter past its heads: claim u is b's unit u.
func (f *fuseState) attendUnits(l int, b blockedSplit) bool {
	c := f.m.cfg
	att := f.at(l, f.attended)
	full := int32(2 + c.Heads/c.KVHeads)
	units := int32(b.units())
	cnt := f.at(l, f.groups)
	did := false
	for att.Load() >= int32(c.KVHeads) {
		if cnt.Load() >= full+units {
			break
		}
		u := int(cnt.Add(1) - full - 1)
		if u >= int(units) {
			break
		}
		i, kv0, kv1 := b.unit(u)
		s := f.ws.scoreSlot()
		f.m.attendRowBlocked(f.ws, f.rows, i, l, s, kv0, kv1)
		f.ws.scoreBusy[s].Store(false)
		did = true
		if att.Add(1) == f.attendedWant(l) {
			f.open(l, 1)
		}
	}
	return did
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
		if b := f.attnSplit(l); b.rows > 0 {
			did = f.attendUnits(l, b)
		} else {
			for kvh := range c.KVHeads {
				did = f.attendClaims(l, kvh) || did
			}
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
