package export

import (
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelSpans splits [0, n) into one span per core and runs f on each.
func parallelSpans(n int, f func(a, b int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(n*k/workers, n*(k+1)/workers)
		}()
	}
	wg.Wait()
}

// parallelUnits runs f on units 0…n-1, each once, on every core: a worker
// takes the next unit when it is done with one. f learns its worker's
// number (below unitWorkers(n)), for scratch made before the call: f must
// not grow shared state.
func parallelUnits(n int, f func(worker, unit int)) {
	workers := unitWorkers(n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(w, i)
			}
		}()
	}
	wg.Wait()
}

// unitWorkers is how many workers parallelUnits(n, …) starts.
func unitWorkers(n int) int { return min(runtime.GOMAXPROCS(0), n) }

// readParallel fills b from r at off, in one piece per core when b is
// large: the copy out of the page cache is most of a read's cost, and a
// block read alone (the first of every tensor) has no compute beside it.
func readParallel(r io.ReaderAt, b []byte, off int64) error {
	parts := min(runtime.GOMAXPROCS(0), len(b)/(256<<10))
	if parts <= 1 {
		_, err := r.ReadAt(b, off)
		return err
	}
	errs := make([]error, parts)
	parallelSpans(parts, func(p, _ int) {
		lo, hi := len(b)*p/parts, len(b)*(p+1)/parts
		_, errs[p] = r.ReadAt(b[lo:hi], off+int64(lo))
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
