package ops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

type pageCall struct{ limit, offset int }

// pager serves items 0..n-1; short, if >= 0, truncates the page at that offset.
func pager(n, short int) (pageFetch[int], func() []pageCall) {
	var mu sync.Mutex
	var calls []pageCall
	fetch := func(ctx context.Context, limit, offset int, dst []int) ([]int, error) {
		mu.Lock()
		calls = append(calls, pageCall{limit, offset})
		mu.Unlock()
		end := min(offset+limit, n)
		if short >= 0 && offset == short {
			end = offset + limit/2
		}
		for i := offset; i < end; i++ {
			dst = append(dst, i)
		}
		return dst, nil
	}
	return fetch, func() []pageCall {
		mu.Lock()
		defer mu.Unlock()
		sort.Slice(calls, func(i, j int) bool { return calls[i].offset < calls[j].offset })
		return calls
	}
}

func TestFetchPagesMatchesTheCLIsRequests(t *testing.T) {
	for _, tc := range []struct {
		total, limit, batch int
		want                []pageCall // after the first page
		wantLen             int
	}{
		{2500, 0, 1000, []pageCall{{1000, 1000}, {500, 2000}}, 2500},
		{2500, 1500, 1000, []pageCall{{500, 1000}}, 1500},
		{250, 0, 100, []pageCall{{100, 100}, {50, 200}}, 250},
		{250, 20, 100, nil, 20},
		{90, 0, 100, nil, 90},
	} {
		fetch, calls := pager(tc.total, -1)
		firstLimit := tc.batch
		if tc.limit > 0 {
			firstLimit = min(tc.batch, tc.limit)
		}
		first, _ := fetch(context.Background(), firstLimit, 0, nil)
		got, err := fetchPages(context.Background(), first, tc.total, tc.limit, tc.batch, noProgress{}, fetch)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.wantLen {
			t.Errorf("%+v: %d items, want %d", tc, len(got), tc.wantLen)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("%+v: item %d is %d: pages out of order", tc, i, v)
			}
		}
		later := calls()[1:]
		if fmt.Sprint(later) != fmt.Sprint(tc.want) && !(len(later) == 0 && len(tc.want) == 0) {
			t.Errorf("%+v: requests %v, want %v", tc, later, tc.want)
		}
	}
}

func TestFetchPagesStopsAtAShortPage(t *testing.T) {
	fetch, _ := pager(5000, 2000)
	first, _ := fetch(context.Background(), 1000, 0, nil)
	got, err := fetchPages(context.Background(), first, 5000, 0, 1000, noProgress{}, fetch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2500 { // 1000 + 1000 + the short 500; later pages dropped
		t.Fatalf("%d items, want 2500", len(got))
	}
}

// TestFetchPagesOverstatedTotal: a server whose total_count claims far more
// than it has costs a few requests past the end, not one per claimed page
// (nor a page table of that size), and the listing is what it has.
func TestFetchPagesOverstatedTotal(t *testing.T) {
	fetch, calls := pager(2500, -1)
	first, _ := fetch(context.Background(), 1000, 0, nil)
	got, err := fetchPages(context.Background(), first, 50_000_000, 0, 1000, noProgress{}, fetch)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2500 {
		t.Fatalf("%d items, want 2500", len(got))
	}
	if n := len(calls()); n > 3+pageConcurrency {
		t.Fatalf("%d requests for a listing of 3 pages", n)
	}
}

// TestFetchPagesSameAsSequential: whatever order the pages finish in, the
// result is the sequential CLI's: every item once, in offset order, and
// nothing past the first short page even when later pages came back.
func TestFetchPagesSameAsSequential(t *testing.T) {
	for seed := range 20 {
		const n, batch = 9300, 1000
		fetch := func(ctx context.Context, limit, offset int, dst []int) ([]int, error) {
			time.Sleep(time.Duration((offset/batch*7+seed)%5) * time.Millisecond)
			end := min(offset+limit, n)
			if offset == 5000 && seed%2 == 1 {
				end = offset + 10 // a short page in the middle ends the listing
			}
			for i := offset; i < end; i++ {
				dst = append(dst, i)
			}
			return dst, nil
		}
		first, _ := fetch(context.Background(), batch, 0, nil)
		got, err := fetchPages(context.Background(), first, n, 0, batch, noProgress{}, fetch)
		if err != nil {
			t.Fatal(err)
		}
		want := n
		if seed%2 == 1 {
			want = 5010
		}
		if len(got) != want {
			t.Fatalf("seed %d: %d items, want %d", seed, len(got), want)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("seed %d: item %d is %d", seed, i, v)
			}
		}
	}
}

// TestFetchPagesDecodesInPlace: each page after the first is handed its
// place in the result as dst, and the result is those places (no join):
// the item at each page's start is the one the fetch wrote.
func TestFetchPagesDecodesInPlace(t *testing.T) {
	fetch, _ := pager(3500, -1)
	var mu sync.Mutex
	starts := map[int]*int{}
	spy := func(ctx context.Context, limit, offset int, dst []int) ([]int, error) {
		if cap(dst) != limit || len(dst) != 0 {
			t.Errorf("page at %d: dst len %d cap %d, want 0 and %d", offset, len(dst), cap(dst), limit)
		}
		out, err := fetch(ctx, limit, offset, dst)
		mu.Lock()
		starts[offset] = &out[0]
		mu.Unlock()
		return out, err
	}
	first, _ := fetch(context.Background(), 1000, 0, nil)
	got, err := fetchPages(context.Background(), first, 3500, 0, 1000, noProgress{}, spy)
	if err != nil || len(got) != 3500 {
		t.Fatalf("%d items, %v", len(got), err)
	}
	for off, p := range starts {
		if &got[off] != p {
			t.Errorf("page at %d was copied into the result, not decoded in place", off)
		}
	}
}

// TestFetchPagesJoinsWhatDidNotFit: a page longer than asked for, a fetch
// that ignores dst, and a total past presizeMax all give the sequential
// listing, joined.
func TestFetchPagesJoinsWhatDidNotFit(t *testing.T) {
	seq := func(offset, end int) []int {
		var out []int
		for i := offset; i < end; i++ {
			out = append(out, i)
		}
		return out
	}
	long := func(ctx context.Context, limit, offset int, dst []int) ([]int, error) {
		if offset == 1000 { // 1200 where 1000 were asked for: the next page overlaps
			return append(dst, seq(offset, offset+1200)...), nil
		}
		return append(dst, seq(offset, min(offset+limit, 3000))...), nil
	}
	ignore := func(ctx context.Context, limit, offset int, _ []int) ([]int, error) {
		return seq(offset, min(offset+limit, 3000)), nil
	}
	for name, tc := range map[string]struct {
		fetch        pageFetch[int]
		total, batch int
		want         []int
	}{
		"long page":    {long, 3000, 1000, append(seq(0, 2200), seq(2000, 3000)...)},
		"ignores dst":  {ignore, 3000, 1000, seq(0, 3000)},
		"past presize": {ignore, presizeMax + 50, 2000, seq(0, 3000)},
	} {
		first, _ := tc.fetch(context.Background(), tc.batch, 0, nil)
		got, err := fetchPages(context.Background(), first, tc.total, 0, tc.batch, noProgress{}, tc.fetch)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %d items (%v), want %d", name, len(got), err, len(tc.want))
		}
	}
}

func TestFetchPagesReportsErrors(t *testing.T) {
	boom := errors.New("boom")
	fetch := func(ctx context.Context, limit, offset int, _ []int) ([]int, error) {
		if offset == 2000 {
			return nil, boom
		}
		select {
		case <-ctx.Done(): // the failure cancels the pages still in flight
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
		return make([]int, limit), nil
	}
	_, err := fetchPages(context.Background(), make([]int, 1000), 9000, 0, 1000, noProgress{}, fetch)
	if !errors.Is(err, boom) { // not the context.Canceled of the pages it stopped
		t.Fatalf("err = %v, want boom", err)
	}
}

func TestParseDate(t *testing.T) {
	for in, want := range map[string]string{
		"2024-01-01":                "2024-01-01T00:00:00Z",
		"2024-01-01T12:00:00Z":      "2024-01-01T12:00:00Z",
		"2024-01-01 12:00":          "2024-01-01T12:00:00Z",
		"2024-01-01T12:00:00+02:00": "2024-01-01T10:00:00Z",
		" 2024-06-01T00:00:00.5 ":   "2024-06-01T00:00:00.5Z",
	} {
		got, err := ParseDate(in)
		if err != nil || got.Format(time.RFC3339Nano) != want {
			t.Errorf("ParseDate(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"2000-13-01", "yesterday", ""} {
		if _, err := ParseDate(bad); err == nil {
			t.Errorf("ParseDate(%q) accepted", bad)
		}
	}
}

func TestBillingTimeArg(t *testing.T) {
	for in, want := range map[string]string{
		"2026-07-13":                "2026-07-13T00:00:00",
		"2026-07-13T05:00:00Z":      "2026-07-13T05:00:00Z",
		"2026-07-13T05:00:00+02:00": "2026-07-13T05:00:00+02:00",
	} {
		if got, err := BillingTimeArg(in); err != nil || got != want {
			t.Errorf("BillingTimeArg(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestFirstMatchingReadsOnlyThePagesItNeeds(t *testing.T) {
	even := func(i *int) bool { return *i%2 == 0 }
	for _, tc := range []struct {
		n, limit, batch int
		wantPages       int
		want            []int
		more            int
		exact           bool
	}{
		{n: 10, limit: 2, batch: 4, wantPages: 1, want: []int{0, 2}, more: 0, exact: false},
		{n: 10, limit: 3, batch: 4, wantPages: 2, want: []int{0, 2, 4}, more: 1, exact: false},
		{n: 10, limit: 4, batch: 4, wantPages: 2, want: []int{0, 2, 4, 6}, more: 0, exact: false},
		{n: 10, limit: 5, batch: 4, wantPages: 3, want: []int{0, 2, 4, 6, 8}, more: 0, exact: true},
		{n: 10, limit: 1, batch: 20, wantPages: 1, want: []int{0}, more: 4, exact: true},
		{n: 8, limit: 9, batch: 4, wantPages: 2, want: []int{0, 2, 4, 6}, more: 0, exact: true},
	} {
		fetch, calls := pager(tc.n, -1)
		got, more, exact, err := firstMatching(context.Background(), tc.limit, tc.batch, even,
			func(ctx context.Context, l, off int) ([]int, int, error) {
				items, err := fetch(ctx, l, off, nil)
				return items, tc.n, err
			})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) || more != tc.more || exact != tc.exact || len(calls()) != tc.wantPages {
			t.Errorf("n=%d limit=%d batch=%d: got %v more=%d exact=%v in %d pages, want %v more=%d exact=%v in %d pages",
				tc.n, tc.limit, tc.batch, got, more, exact, len(calls()), tc.want, tc.more, tc.exact, tc.wantPages)
		}
	}
}
