// Package lazyre is a regular expression compiled on first use. Every
// package linked into tinker initialises at every start, `tinker -c '1+1'`
// included, so a package-level regexp.MustCompile costs each process its
// compile (tens of microseconds and kilobytes of heap each) whether or not
// the pattern is ever used. Declare package-level patterns with New instead;
// lazyre_test.go fails on a package-level regexp.MustCompile.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a pattern compiled the first time one of its methods runs. The
// methods are regexp.Regexp's, and as safe for concurrent use.
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// New returns expr as a Regexp; like regexp.MustCompile, a bad expr panics
// (on first use), so it is for patterns written in the source.
func New(expr string) *Regexp { return &Regexp{expr: expr} }

// Compiled returns the compiled pattern.
func (r *Regexp) Compiled() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

func (r *Regexp) String() string { return r.expr }

func (r *Regexp) Match(b []byte) bool { return r.Compiled().Match(b) }

func (r *Regexp) MatchString(s string) bool { return r.Compiled().MatchString(s) }

func (r *Regexp) FindString(s string) string { return r.Compiled().FindString(s) }

func (r *Regexp) FindStringSubmatch(s string) []string { return r.Compiled().FindStringSubmatch(s) }

func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.Compiled().ReplaceAllString(src, repl)
}

func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Compiled().ReplaceAllStringFunc(src, repl)
}
