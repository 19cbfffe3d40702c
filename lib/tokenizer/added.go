package tokenizer

import (
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
// AddedVocabulary does before any normalization or pre-tokenization. It is
// a byte trie: Llama 3's 256 special tokens all start with "<|", so testing
// them one by one at every '<' would be slow.
type addedMatcher struct {
	first [256]bool
	nodes []trieNode
}

type trieNode struct {
	next map[byte]int32
	tok  *addedToken // a token ends here
}

func newAddedMatcher(toks []*addedToken) *addedMatcher {
	if len(toks) == 0 {
		return nil
	}
	m := &addedMatcher{nodes: []trieNode{{}}}
	for _, t := range toks {
		if t.content == "" {
			continue
		}
		m.first[t.content[0]] = true
		n := int32(0)
		for i := 0; i < len(t.content); i++ {
			c := t.content[i]
			nx, ok := m.nodes[n].next[c]
			if !ok {
				if m.nodes[n].next == nil {
					m.nodes[n].next = map[byte]int32{}
				}
				nx = int32(len(m.nodes))
				m.nodes[n].next[c] = nx
				m.nodes = append(m.nodes, trieNode{})
			}
			n = nx
		}
		if m.nodes[n].tok == nil { // the first of duplicate contents wins
			m.nodes[n].tok = t
		}
	}
	return m
}

// find returns the first added token at or after from, or nil.
func (m *addedMatcher) find(s string, from int) (start, end int, tok *addedToken) {
	for i := from; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		n := int32(0)
		for j := i; j < len(s); j++ {
			nx, ok := m.nodes[n].next[s[j]]
			if !ok {
				break
			}
			n = nx
			if t := m.nodes[n].tok; t != nil {
				tok, end = t, j+1 // keep walking: the longest match wins
			}
		}
		if tok != nil {
			return i, end, tok
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
