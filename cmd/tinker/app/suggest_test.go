package app

import "testing"

// The expected lists are Python's difflib.get_close_matches(word, options).
func TestSuggestMatchesDifflib(t *testing.T) {
	opts := func(names ...string) []flagSpec {
		out := make([]flagSpec, len(names))
		for i, n := range names {
			out[i] = flagSpec{Long: n}
		}
		return out
	}
	del := opts("--run-id", "--type", "--before", "--after", "--yes", "--format", "--help")
	list := opts("--limit", "--columns", "--format", "--help")
	for _, tc := range []struct {
		word  string
		specs []flagSpec
		want  string
	}{
		{"--aftre", del, " (Possible options: --after, --before, --type)"},
		{"--bfore", del, " (Possible options: --before, --format)"},
		{"--tpe", del, " (Possible options: --after, --type, --yes)"},
		{"--r", del, " Did you mean --after?"},
		{"--hel", del, " (Possible options: --help, --yes)"},
		{"--cols", list, " Did you mean --columns?"},
		{"--l", list, " (Possible options: --help, --limit)"},
		{"--zzzzzz", list, ""},
		{"-l", list, ""},
	} {
		if got := suggest(tc.word, tc.specs); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestSimilarityIsDifflibsRatio(t *testing.T) {
	// difflib.SequenceMatcher(None, a, b).ratio()
	for _, tc := range []struct {
		a, b string
		want float64
	}{
		{"--columns", "--cols", 0.8},
		{"--before", "--format", 0.625},
		{"abcd", "bcda", 0.75},
		{"", "", 1},
	} {
		if got := similarity(tc.a, tc.b); got != tc.want {
			t.Errorf("similarity(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
