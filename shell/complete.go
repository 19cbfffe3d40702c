package shell

import (
	"sort"
	"strings"

	"go.starlark.net/starlark"
)

var keywords = []string{"and", "break", "continue", "def", "elif", "else", "for", "if", "in", "lambda", "load", "not", "or", "pass", "return", "while", "True", "False", "None"}

// Complete proposes globals, builtins, keywords, module members and
// attributes of values named by a dotted path; keyword arguments at an
// argument of a call; inside a string, model names and tinker:// paths
// (from the backend, see candidates.go). It never calls user functions.
func (in *Interp) Complete(line string, pos int) (head string, completions []string, tail string) {
	if pos > len(line) {
		pos = len(line)
	}
	start := pos
	for start > 0 && isWordByte(line[start-1]) {
		start--
	}
	if h, c, t, ok := in.completeString(line, pos); ok {
		return h, c, t
	}
	head, word, tail := line[:start], line[start:pos], line[pos:]
	dot := strings.LastIndexByte(word, '.')
	if dot < 0 {
		kw := in.keywordArgs(line, start, word)
		completions = kw
		seen := map[string]bool{}
		add := func(name string) {
			if strings.HasPrefix(name, word) && !seen[name] && name != lateKey {
				seen[name] = true
				completions = append(completions, name)
			}
		}
		for name := range in.globals {
			add(name)
		}
		for name := range in.predeclared {
			add(name)
		}
		for name := range starlark.Universe { // len, sorted, range, ...
			add(name)
		}
		for _, k := range keywords {
			add(k)
		}
		sort.Strings(completions[len(kw):]) // keyword arguments first
		return head, capCompletions(completions), tail
	}
	v := in.lookupPath(word[:dot])
	attrs, ok := v.(starlark.HasAttrs)
	if !ok {
		return head, nil, tail
	}
	partial := word[dot+1:]
	for _, name := range attrs.AttrNames() {
		if strings.HasPrefix(name, partial) {
			completions = append(completions, word[:dot+1]+name)
		}
	}
	sort.Strings(completions)
	return head, capCompletions(completions), tail
}

// maxCompletions is the most candidates Tab lists. Beyond it liner asks
// "Display all N possibilities? (y or n)", where Enter and Ctrl-C do not
// end its prompt, which the keyboard's line-at-a-time feed relies on.
const maxCompletions = 100

func capCompletions(c []string) []string {
	if len(c) > maxCompletions {
		return c[:maxCompletions]
	}
	return c
}

func (in *Interp) lookupPath(path string) starlark.Value {
	parts := strings.Split(path, ".")
	v, ok := in.globals[parts[0]]
	if !ok {
		v, ok = in.predeclared[parts[0]]
	}
	if !ok {
		return nil
	}
	for _, p := range parts[1:] {
		h, ok := v.(starlark.HasAttrs)
		if !ok {
			return nil
		}
		next, err := h.Attr(p)
		if err != nil || next == nil {
			return nil
		}
		v = next
	}
	return v
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
