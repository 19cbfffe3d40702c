package engine

import "testing"

// splitWork's shares cover every item once, in order, and balance the
// work: each share is within one item's work of an equal share.
func TestSplitWorkCoversAndBalances(t *testing.T) {
	works := map[string]func(i int) int{
		"rising":    func(i int) int { return i + 1 },
		"falling":   func(i int) int { return 40 - i },
		"zero tail": func(i int) int { return max(0, 20-i) },
	}
	for name, w := range works {
		for _, parts := range []int{1, 2, 3, 5} {
			next, total := 0, 0
			for i := range 40 {
				total += w(i)
			}
			for part := range parts {
				lo, hi := splitWork(40, parts, part, w)
				if lo != next || hi < lo {
					t.Fatalf("%s, %d parts: part %d is %d..%d, want it to start at %d", name, parts, part, lo, hi, next)
				}
				sum := 0
				for i := lo; i < hi; i++ {
					sum += w(i)
				}
				if d := sum*parts - total; d > 40*parts || d < -40*parts {
					t.Errorf("%s, %d parts: part %d has work %d of %d", name, parts, part, sum, total)
				}
				next = hi
			}
			if next != 40 {
				t.Fatalf("%s, %d parts: shares end at %d of 40", name, parts, next)
			}
		}
	}
}
