package export

import (
	"errors"
	"sync/atomic"
	"testing"
)

// Every unit of every job runs once; a job is ready only when all its
// units are done; the first error comes back from close.
func TestUnitPool(t *testing.T) {
	p := newUnitPool()
	const jobs, units = 50, 37
	var counts [jobs][units]atomic.Int32
	readies := make([]<-chan struct{}, jobs)
	errUnit := errors.New("unit 3 of job 20")
	for j := range jobs {
		readies[j] = p.submit(units, func(_ *scratch, i int) error {
			counts[j][i].Add(1)
			if j == 20 && i == 3 {
				return errUnit
			}
			return nil
		})
	}
	for j, ready := range readies {
		<-ready
		for i := range units {
			if c := counts[j][i].Load(); c != 1 {
				t.Fatalf("job %d ready with unit %d run %d times", j, i, c)
			}
		}
	}
	if err := p.close(); !errors.Is(err, errUnit) {
		t.Fatalf("close = %v, want the unit's error", err)
	}
	q := newUnitPool()
	<-q.submit(0, nil) // an empty job is ready at once
	if err := q.close(); err != nil {
		t.Fatal(err)
	}
}
