package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Comments point maintainers at docs/ by file and heading, as in
// (docs/protocol.md, "Futures"). These tests keep such pointers, and the
// links between the docs themselves, from going stale.

const repoRoot = "../.."

var (
	// A docs file named in a comment, with the quoted headings after it.
	pointerRE = regexp.MustCompile(`docs/([A-Za-z0-9_.-]+\.md)((?:,\s*"[^"]+")*)`)
	quotedRE  = regexp.MustCompile(`"([^"]+)"`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	// A relative Markdown link: [text](file.md#anchor) or [text](#anchor).
	linkRE = regexp.MustCompile(`\]\(([A-Za-z0-9_.-]*\.md)?(?:#([^)\s]+))?\)`)
)

// docHeadings reads docs/<name> and returns its headings, or nil and false
// when the file does not exist.
func docHeadings(t *testing.T, name string) ([]string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", name))
	if os.IsNotExist(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, m := range headingRE.FindAllStringSubmatch(string(b), -1) {
		hs = append(hs, m[1])
	}
	return hs, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// commentText returns the comment part of each line of a Go or proto
// file, or the "#" lines of a golden txtar case.
func commentText(path, src string) []string {
	var out []string
	for _, line := range strings.Split(src, "\n") {
		if strings.HasSuffix(path, ".txtar") {
			if strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		} else if i := strings.Index(line, "//"); i >= 0 {
			out = append(out, line[i+2:])
		}
	}
	return out
}

func TestCommentPointersResolve(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != repoRoot && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".proto", ".txtar":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, c := range commentText(path, string(b)) {
			for _, m := range pointerRE.FindAllStringSubmatch(c, -1) {
				checked++
				headings, ok := docHeadings(t, m[1])
				if !ok {
					t.Errorf("%s: names docs/%s, which does not exist", path, m[1])
					continue
				}
				for _, q := range quotedRE.FindAllStringSubmatch(m[2], -1) {
					if !contains(headings, q[1]) {
						t.Errorf("%s: docs/%s has no heading %q", path, m[1], q[1])
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("found no docs/ pointers at all: is the walk looking in the right place?")
	}
}

// slug is the anchor GitHub gives a heading.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestDocsLinksResolve(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(b), -1) {
			target := filepath.Base(f)
			if m[1] != "" {
				target = m[1]
			}
			headings, ok := docHeadings(t, target)
			if !ok {
				t.Errorf("%s: links to %s, which is not in docs/", f, target)
				continue
			}
			if m[2] == "" {
				continue
			}
			found := false
			for _, h := range headings {
				found = found || slug(h) == m[2]
			}
			if !found {
				t.Errorf("%s: no heading in %s has the anchor #%s", f, target, m[2])
			}
		}
	}
}

// TestProsePointersResolve checks the same file-and-heading pointers
// in the README and the docs' own prose, where a heading may wrap.
func TestProsePointersResolve(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"))
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pointerRE.FindAllStringSubmatch(string(b), -1) {
			headings, ok := docHeadings(t, m[1])
			if !ok {
				t.Errorf("%s: names docs/%s, which does not exist", f, m[1])
				continue
			}
			for _, q := range quotedRE.FindAllStringSubmatch(m[2], -1) {
				checked++
				h := strings.Join(strings.Fields(q[1]), " ")
				if !contains(headings, h) {
					t.Errorf("%s: docs/%s has no heading %q", f, m[1], h)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no quoted docs/ pointers in the README or docs: is the pattern still the one they use?")
	}
}
