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

// fetchPages implements the official CLI's paging for an offset-paginated
// listing: after the first page, the remaining (limit, offset) requests are
// the same ones the CLI sends one after another, but up to pageConcurrency
// of them are in flight at once. A short page ends the listing.
//
// limit <= 0 fetches everything. total < 0 means the server gave no count:
// the first page is everything.
func fetchPages[T any](ctx context.Context, first []T, total, limit, batch int, prog Progress,
	fetch func(ctx context.Context, limit, offset int) ([]T, error)) ([]T, error) {
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
	type page struct{ limit, offset int }
	var pages []page
	for off := len(first); off < target; off += batch {
		pages = append(pages, page{min(batch, target-off), off})
	}
	prog.Add(int64(len(first)))
	results := make([][]T, len(pages))
	errs := make([]error, len(pages))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, pageConcurrency)
	var wg sync.WaitGroup
	var causeOnce sync.Once
	var cause error
	for i, p := range pages {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func(i int, p page) {
			defer wg.Done()
			defer func() { <-sem }()
			items, err := fetch(ctx, p.limit, p.offset)
			results[i], errs[i] = items, err
			if err != nil {
				// The first failure is the cause: the pages it cancels
				// fail with context.Canceled, which would read as Ctrl-C.
				causeOnce.Do(func() { cause = err })
				cancel()
				return
			}
			prog.Add(int64(len(items)))
		}(i, p)
	}
	wg.Wait()
	if cause != nil {
		return nil, cause
	}
	// Sized from what came (never from the server's total): 10,000
	// entries appended into a growing slice were copied four times over.
	n := len(first)
	for i := range pages {
		n += len(results[i])
	}
	out := append(make([]T, 0, n), first...)
	for i, p := range pages {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, results[i]...)
		if len(results[i]) < p.limit {
			break // the listing ended early
		}
	}
	return out, nil
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
