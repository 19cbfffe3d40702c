package shell

import (
	"context"
	"sort"
	"strings"

	"go.starlark.net/starlark"
)

// Completion that depends on where the cursor is: inside a string literal
// (model names and tinker:// paths, never global names) and at an argument
// of a call (the function's keyword arguments).

// completeString completes the string literal the cursor is in: model
// names, tinker:// paths and file names (as fits the call it is an
// argument of), closing the quote after a lone complete name.
func (in *Interp) completeString(line string, pos int) (head string, completions []string, tail string, ok bool) {
	start, ok := openQuote(line[:pos])
	if !ok {
		return "", nil, "", false
	}
	word := line[start+1 : pos]
	fn := callee(line[:start])
	var pool []string
	if !fileOnly(fn) && !strings.HasPrefix(fn, "io.") {
		c := in.candidates()
		pool = c.Models
		if strings.HasPrefix(word, "tinker://") || strings.HasPrefix("tinker://", word) {
			pool = append(append([]string(nil), pool...), c.Paths...)
		}
	}
	if !modelOnly(fn) && !strings.HasPrefix(word, "tinker://") {
		pool = append(append([]string(nil), pool...), fileCandidates(word)...)
	}
	seen := map[string]bool{}
	for _, p := range pool {
		if strings.HasPrefix(p, word) && !seen[p] {
			seen[p] = true
			completions = append(completions, p)
		}
	}
	sort.Strings(completions)
	tail = line[pos:]
	return line[:start+1], closeQuote(capCompletions(completions), line[start], tail), tail, true
}

// candidates are the backend's names; a Ctrl-C typed while they are
// fetched ends the fetch (and, as at any prompt, clears the line).
func (in *Interp) candidates() Candidates {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if in.keys != nil {
		defer in.keys.watchPrompt(cancel)()
	}
	return in.cands.get(ctx, in.Env.Backend)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// openQuote returns where the string literal open at the end of s starts.
func openQuote(s string) (start int, open bool) {
	var quote byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote, start = c, i
		case quote == 0 && c == '#':
			return 0, false
		}
	}
	return start, quote != 0
}

// keywordArgs lists name= for each keyword argument of the call the word
// at start begins an argument of, matching word.
func (in *Interp) keywordArgs(line string, start int, word string) []string {
	before := strings.TrimRight(line[:start], " ")
	if !strings.HasSuffix(before, "(") && !strings.HasSuffix(before, ",") {
		return nil
	}
	fn := callee(before)
	if fn == "" {
		return nil
	}
	var out []string
	for _, p := range in.paramNames(fn) {
		if strings.HasPrefix(p, word) {
			out = append(out, p+"=")
		}
	}
	return out
}

// callee names the function whose parenthesis is open at the end of s.
func callee(s string) string {
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')', ']', '}':
			depth++
		case '[', '{':
			depth--
		case '(':
			if depth > 0 {
				depth--
				continue
			}
			j := i
			for j > 0 && isWordByte(s[j-1]) {
				j--
			}
			return s[j:i]
		}
	}
	return ""
}

// paramNames lists the named parameters of a function: a Starlark
// function's own, a builtin's from the signature its help shows.
func (in *Interp) paramNames(name string) []string {
	switch v := in.lookupPath(name).(type) {
	case *starlark.Function:
		var names []string
		for i := 0; i < v.NumParams(); i++ {
			n, _ := v.Param(i)
			names = append(names, n)
		}
		return names
	case *starlark.Builtin:
		return in.builtinParams(v.Name())
	}
	return nil
}

// builtinParams reads parameter names from the signature lines that
// start help(name)'s text, e.g. "sample(model, prompt=None, ...)".
func (in *Interp) builtinParams(name string) []string {
	help, ok := in.predeclared["help"].(*starlark.Builtin)
	if !ok {
		return nil
	}
	v, err := starlark.Call(&starlark.Thread{Name: "complete"}, help, starlark.Tuple{starlark.String(name)}, nil)
	if err != nil {
		return nil
	}
	var names []string
	short := name[strings.LastIndexByte(name, '.')+1:]
	for _, l := range strings.Split(v.String(), "\n") {
		open := strings.Index(l, "(")
		if open < 0 || !strings.HasSuffix(l[:open], short) || !strings.HasSuffix(l, ")") {
			break
		}
		for _, p := range strings.Split(l[open+1:len(l)-1], ",") {
			p, _, _ = strings.Cut(strings.TrimSpace(p), "=")
			if p = strings.TrimLeft(p, "*"); p != "" && !contains(names, p) {
				names = append(names, p)
			}
		}
	}
	return names
}
