package hfhub

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// globRE translates a shell-style pattern as huggingface_hub applies it to
// repo paths: '*' and '?' also match '/', [...] is a character class ('!'
// negates), matching is case-sensitive, '\' is a path separator, and a
// pattern ending in '/' means everything below that folder.
func globRE(pattern string) (*regexp.Regexp, error) {
	pattern = strings.ReplaceAll(pattern, `\`, "/")
	if strings.HasSuffix(pattern, "/") {
		pattern += "*"
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := i + 1
			if j < len(pattern) && pattern[j] == '!' {
				j++
			}
			if j < len(pattern) && pattern[j] == ']' { // a leading ']' is a member
				j++
			}
			for j < len(pattern) && pattern[j] != ']' {
				j++
			}
			if j >= len(pattern) { // unclosed: a literal '['
				b.WriteString(`\[`)
				continue
			}
			class := pattern[i+1 : j]
			i = j
			b.WriteByte('[')
			if strings.HasPrefix(class, "!") {
				b.WriteByte('^')
				class = class[1:]
			}
			b.WriteString(strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`, `^`, `\^`).Replace(class))
			b.WriteByte(']')
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString(`)$`)
	return regexp.Compile(b.String())
}

// defaultIgnores keep git and Hugging Face cache folders out of an upload.
var defaultIgnores = []string{".git", ".git/*", "*/.git", "**/.git/**", ".cache/huggingface", ".cache/huggingface/*", "*/.cache/huggingface", "**/.cache/huggingface/**"}

// selectFiles lists the regular files under dir as slash-separated paths,
// sorted, keeping those that match an allow pattern (all when there are
// none) and no ignore pattern.
func selectFiles(dir string, allow, ignore []string) ([]string, error) {
	compile := func(pats []string) ([]*regexp.Regexp, error) {
		var res []*regexp.Regexp
		for _, p := range pats {
			re, err := globRE(p)
			if err != nil {
				return nil, fmt.Errorf("bad pattern %q: %w", p, err)
			}
			res = append(res, re)
		}
		return res, nil
	}
	allowRE, err := compile(allow)
	if err != nil {
		return nil, err
	}
	ignoreRE, err := compile(append(append([]string{}, ignore...), defaultIgnores...))
	if err != nil {
		return nil, err
	}
	matchAny := func(res []*regexp.Regexp, p string) bool {
		for _, re := range res {
			if re.MatchString(p) {
				return true
			}
		}
		return false
	}
	var files []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if (len(allowRE) == 0 || matchAny(allowRE, rel)) && !matchAny(ignoreRE, rel) {
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}
