package shell

import (
	"reflect"
	"testing"

	"go.starlark.net/syntax"
)

// TestSyntaxPkgPath: the constant replaceIdents compares struct types'
// package paths with is the syntax package's, so late binding still walks
// the syntax tree (and only it).
func TestSyntaxPkgPath(t *testing.T) {
	if got := reflect.TypeFor[syntax.File]().PkgPath(); got != syntaxPkg {
		t.Errorf("syntax's package path is %q, syntaxPkg says %q", got, syntaxPkg)
	}
}
