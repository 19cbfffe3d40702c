package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

type addedToken struct {
	id      int
	content string
	special bool
	lstrip  bool // swallow whitespace on the left
	rstrip  bool // swallow whitespace on the right
}

// addedMatcher finds added tokens in text, leftmost-longest, as Hugging Face's
// AddedVocabulary does before any normalization or pre-tokenization.
type addedMatcher struct {
	first   [256]bool
	byFirst [256][]*addedToken // longest first
}

func newAddedMatcher(toks []*addedToken) *addedMatcher {
	if len(toks) == 0 {
		return nil
	}
	m := &addedMatcher{}
	for _, t := range toks {
		if t.content == "" {
			continue
		}
		b := t.content[0]
		m.first[b] = true
		m.byFirst[b] = append(m.byFirst[b], t)
	}
	for b := range m.byFirst {
		l := m.byFirst[b]
		sort.SliceStable(l, func(i, j int) bool { return len(l[i].content) > len(l[j].content) })
	}
	return m
}

// find returns the first added token at or after from, or nil.
func (m *addedMatcher) find(s string, from int) (start, end int, tok *addedToken) {
	for i := from; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		for _, t := range m.byFirst[s[i]] {
			if strings.HasPrefix(s[i:], t.content) {
				return i, i + len(t.content), t
			}
		}
	}
	return -1, -1, nil
}

// splitAdded calls plain for the text between added tokens and token for each
// added token, honouring lstrip/rstrip.
func (m *addedMatcher) splitAdded(s string, plain func(string), token func(*addedToken)) {
	if m == nil {
		plain(s)
		return
	}
	pos := 0
	for pos < len(s) {
		start, end, t := m.find(s, pos)
		if t == nil {
			break
		}
		before := s[pos:start]
		if t.lstrip {
			before = strings.TrimRightFunc(before, unicode.IsSpace)
		}
		if before != "" {
			plain(before)
		}
		token(t)
		if t.rstrip {
			for end < len(s) {
				r, n := utf8.DecodeRuneInString(s[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += n
			}
		}
		pos = end
	}
	if pos < len(s) {
		plain(s[pos:])
	}
}
