package ops

import (
	"context"
	"sync"
)

// pageConcurrency bounds the page requests in flight after the first page.
const pageConcurrency = 4

// Progress follows a long operation (pages fetched, checkpoints deleted).
type Progress interface {
	Add(n int64)
	Finish()
}

type noProgress struct{}

func (noProgress) Add(int64) {}
func (noProgress) Finish()   {}

// presizeMax bounds, in items, the listing fetchPages lays out in one
// slice before its pages come: a total claimed past it (a server can
// claim 10^12) is fetched into pages of their own and joined.
const presizeMax = 1 << 16

// pageFetch fetches the page (limit, offset) and returns append(dst,
// page...): a page that fits dst's capacity lands in place.
type pageFetch[T any] func(ctx context.Context, limit, offset int, dst []T) ([]T, error)

// fetchPages implements the official CLI's paging for an offset-paginated
// listing: after the first page, the remaining (limit, offset) requests are
// the same ones the CLI sends one after another, but up to pageConcurrency
// of them are in flight at once. The result is what the sequential CLI
// gets, in its order: pages are joined by offset, and a short page ends
// the listing. Pages are launched one at a time and none after a short
// page has come back, so a total the server overstates (even 10^12) costs
// at most pageConcurrency requests past the end, not a request or an
// allocation per page it claims. Any failing page fails the listing
// (all or nothing), with its own error.
//
// limit <= 0 fetches everything. total < 0 means the server gave no count:
// the first page is everything.
func fetchPages[T any](ctx context.Context, first []T, total, limit, batch int, prog Progress, fetch pageFetch[T]) ([]T, error) {
	if total < 0 {
		return first, nil
	}
	target := total
	if limit > 0 && limit < total {
		target = limit
	}
	if len(first) >= target || len(first) < min(batch, target) {
		if len(first) > target {
			first = first[:target]
		}
		return first, nil
	}
	prog.Add(int64(len(first)))
	// Each page is decoded straight into its place in the result: with
	// 10,000 checkpoints, joining separately decoded pages copied 1 MB
	// into memory touched for the first time, a tenth of the command.
	var whole []T
	if target <= presizeMax {
		whole = make([]T, target)
		copy(whole, first)
	}
	pages, err := fetchRest(ctx, len(first), target, batch, prog, whole, fetch)
	if err != nil {
		return nil, err
	}
	if n, ok := inPlace(whole, len(first), pages); ok {
		return whole[:n:n], nil
	}
	return join(first, pages), nil
}

// inPlace reports whether every page landed where fetchPages laid it out
// (a page longer than asked for was moved by the append), and the
// listing's length then. Pages before the last are full, so each one
// starts where the one before it ended.
func inPlace[T any](whole []T, from int, pages [][]T) (int, bool) {
	n := from
	for _, p := range pages {
		// The length check first: elements of size zero (a listing
		// fetchPages only counts) all share one address.
		if whole == nil || n+len(p) > len(whole) || (len(p) > 0 && &p[0] != &whole[n]) {
			return 0, false
		}
		n += len(p)
	}
	return n, true
}

// join concatenates the first page and the rest into one slice, sized
// from what came (never from the server's total).
func join[T any](first []T, pages [][]T) []T {
	n := len(first)
	for _, p := range pages {
		n += len(p)
	}
	out := append(make([]T, 0, n), first...)
	for _, p := range pages {
		out = append(out, p...)
	}
	return out
}

// pageRun is the shared state of the pages in flight.
type pageRun[T any] struct {
	mu      sync.Mutex
	results [][]T
	limits  []int
	short   bool  // a page came back short: the listing has ended
	cause   error // the first failure
}

// fetchRest fetches the pages at offsets from..target (batch each, the
// last one shorter) and returns them in order up to the first short one.
// Page off is decoded into whole[off:off+limit] when whole is set.
func fetchRest[T any](ctx context.Context, from, target, batch int, prog Progress, whole []T, fetch pageFetch[T]) ([][]T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := &pageRun[T]{}
	sem := make(chan struct{}, pageConcurrency)
	var wg sync.WaitGroup
	for off := from; off < target && run.more(ctx, sem); off += batch {
		l := min(batch, target-off)
		i := run.add(l)
		var dst []T
		if whole != nil {
			dst = whole[off : off : off+l]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			items, err := fetch(ctx, l, off, dst)
			run.done(i, items, err, prog)
			if err != nil {
				cancel() // after done: the cause is recorded first
			}
		}()
	}
	wg.Wait()
	if run.cause != nil {
		return nil, run.cause
	}
	if err := ctx.Err(); err != nil {
		return nil, err // canceled by the caller between pages
	}
	return run.inOrder(), nil
}

// more takes a slot for one more page and says whether to launch it: not
// after a failure, a short page or the caller's cancellation.
func (r *pageRun[T]) more(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.short || r.cause != nil || ctx.Err() != nil {
		<-sem
		return false
	}
	return true
}

// add makes room for the next page's result and returns its index.
func (r *pageRun[T]) add(limit int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, nil)
	r.limits = append(r.limits, limit)
	return len(r.results) - 1
}

// done records page i. The first failure is the cause: the pages it
// cancels fail with context.Canceled, which would read as Ctrl-C.
func (r *pageRun[T]) done(i int, items []T, err error, prog Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if r.cause == nil {
			r.cause = err
		}
		return
	}
	r.results[i] = items
	if len(items) < r.limits[i] {
		r.short = true
	}
	prog.Add(int64(len(items)))
}

// inOrder returns the pages up to and including the first short one.
func (r *pageRun[T]) inOrder() [][]T {
	for i, p := range r.results {
		if len(p) < r.limits[i] {
			return r.results[:i+1]
		}
	}
	return r.results
}

// firstMatching reads an offset-paginated listing one page of batch items
// at a time until it holds limit (> 0) items that keep accepts: a filter
// the server cannot apply costs only the pages it needs. more counts the
// accepted items past limit on the pages read; exact says the listing was
// read to its end, so more is the whole count. fetch reports the server's
// total, or -1 when it gives none.
func firstMatching[T any](ctx context.Context, limit, batch int, keep func(*T) bool,
	fetch func(ctx context.Context, limit, offset int) (items []T, total int, err error)) (out []T, more int, exact bool, err error) {
	for off := 0; ; {
		items, total, err := fetch(ctx, batch, off)
		if err != nil {
			return nil, 0, false, err
		}
		for i := range items {
			if !keep(&items[i]) {
				continue
			}
			if len(out) < limit {
				out = append(out, items[i])
			} else {
				more++
			}
		}
		off += len(items)
		if len(items) < batch || (total >= 0 && off >= total) {
			return out, more, true, nil
		}
		if len(out) >= limit {
			return out, more, false, nil
		}
	}
}
