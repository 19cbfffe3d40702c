// Package suggest finds the name a person probably meant: the "did you
// mean" of undefined names at the prompt and unknown base models.
package suggest

// Nearest is the candidate closest to name by edit distance, if it is
// within a third of name's length (at least 1); ties go to the first.
// It returns "" when nothing is that close.
func Nearest(name string, candidates []string) string {
	best, bestD := "", max(1, len(name)/3)+1
	for _, c := range candidates {
		if d := distance(name, c); d < bestD && c != name {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
