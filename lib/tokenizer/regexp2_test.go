package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// withRegexp2 makes the pre-tokenizer run every Split pattern through
// regexp2 instead of the hand-written matchers (benchmarks, cross-checks).
func withRegexp2() Option {
	return func(o *options) {
		o.newSplit = func(p string) (preTokenizer, error) { return newRegexSplit(p) }
	}
}

// regexSplit runs a Split pattern through dlclark/regexp2, a backtracking
// engine with look-around: the oracle the hand-written matchers are checked
// and benchmarked against. Only the tests link it (tinker's start would
// pay its Unicode tables; TestBinaryLinksNoUnlinkedPrefix in cmd/tinker/app).
type regexSplit struct{ re *regexp2.Regexp }

func newRegexSplit(pattern string) (regexSplit, error) {
	// Rust-regex class intersection with a negated class, [A&&[^B]] as in
	// KimiPattern, is .NET class subtraction [A-[B]].
	pattern = strings.ReplaceAll(pattern, "&&[^", "-[")
	re, err := regexp2.Compile(pattern, regexp2.Unicode)
	if err != nil {
		// Unicode mode rejects some escapes; retry in the default mode.
		re, err = regexp2.Compile(pattern, regexp2.None)
		if err != nil {
			return regexSplit{}, fmt.Errorf("compile split pattern %q: %w", pattern, err)
		}
	}
	return regexSplit{re}, nil
}

func (p regexSplit) split(s string, emit func(string)) {
	runes := []rune(s)
	// byte offset of each rune index
	offs := make([]int, len(runes)+1)
	o := 0
	for k, r := range runes {
		offs[k] = o
		o += utf8.RuneLen(r)
		if r == utf8.RuneError {
			// Invalid bytes were decoded as U+FFFD; fall back to exact offsets.
			offs = nil
			break
		}
	}
	if offs == nil {
		offs = make([]int, 0, len(runes)+1)
		for k := range s {
			offs = append(offs, k)
		}
	}
	offs = append(offs[:len(runes)], len(s))
	gap := 0
	m, err := p.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		start, end := offs[m.Index], offs[m.Index+m.Length]
		if end > start {
			if gap < start {
				emit(s[gap:start])
			}
			emit(s[start:end])
			gap = end
		}
		m, err = p.re.FindNextMatch(m)
	}
	if gap < len(s) {
		emit(s[gap:])
	}
}

// TestLiteralSplitMatchesRegexp2: a Split pattern given as a String splits
// as regexp2 splits on the escaped literal (as the loader once ran it).
func TestLiteralSplitMatchesRegexp2(t *testing.T) {
	alphabet := []string{"a", "b", " ", "\n", ".", "*", "(", "[", "|", "é", "中", "\u00a0", "ab", "a.b"}
	r := rand.New(rand.NewPCG(34, 34))
	for _, lit := range []string{" ", "\n", ".", "a.b", "*(", "[|", "é", "中", "ab", "\u00a0"} {
		rx, err := newRegexSplit(regexp2.Escape(lit))
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2000; k++ {
			var b strings.Builder
			for n := r.IntN(12); n > 0; n-- {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			s := b.String()
			if got, want := pieces(matchSplit{literalMatch(lit)}, s), pieces(rx, s); !slices.Equal(got, want) {
				t.Fatalf("literal %q on %q: %q, regexp2 %q", lit, s, got, want)
			}
		}
	}
}

// TestUnknownPatternIsAnError: without a general engine, a pattern with no
// hand-written matcher fails to load, saying so, rather than splitting
// differently.
func TestUnknownPatternIsAnError(t *testing.T) {
	_, err := splitFor(`\p{L}+|\s+(?!\S)`, nil)
	if err == nil || !strings.Contains(err.Error(), "no matcher") {
		t.Fatalf("splitFor(unknown pattern) error = %v", err)
	}
	if _, err := splitFor(patLlama3, nil); err != nil {
		t.Fatal(err)
	}
}
