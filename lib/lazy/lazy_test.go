package lazy

import (
	"sync"
	"testing"
)

var calls int

var counted = Value[[]int]{New: func() []int { calls++; return []int{1, 2, 3} }}

// TestGetCallsNewOnce: every Get, from any goroutine, returns what the one
// call of New made (the same backing array), and New runs once.
func TestGetCallsNewOnce(t *testing.T) {
	if calls != 0 {
		t.Fatalf("New ran %d times before any Get", calls)
	}
	first := counted.Get()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := counted.Get(); &got[0] != &first[0] {
				t.Errorf("Get returned another value")
			}
		}()
	}
	wg.Wait()
	if calls != 1 {
		t.Errorf("New ran %d times, want once", calls)
	}
}
