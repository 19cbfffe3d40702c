package builtins

import (
	"regexp"
	"strings"
	"testing"
)

// An example that assigns to a predeclared name (run = sft(...)) hides
// that module or builtin for the rest of a prompt session, so a reader who
// copies it loses run.list(). No example may do that.
func TestExamplesDoNotShadowPredeclared(t *testing.T) {
	universe := Universe()
	assign := regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=[^=]`)
	for _, d := range allDocs() {
		for _, line := range strings.Split(d.Example, "\n") {
			m := assign.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if _, ok := universe[m[1]]; ok {
				t.Errorf("help(%s) example assigns to %q, hiding the predeclared %s: %s", d.Name, m[1], m[1], line)
			}
		}
	}
}
