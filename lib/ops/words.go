package ops

import "fmt"

// Count is a number of things in words: "1 token", "0 tokens", "5 tokens".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Plural titles a list: "No X found", "1 x", "N xs".
func Plural(n int, one, many string) string {
	switch n {
	case 0:
		return "No " + many + " found"
	}
	return Count(n, one, many)
}
