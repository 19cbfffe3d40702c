package shell

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Late binding at the prompt. Each chunk typed at the prompt is its own
// Starlark module, resolved against the globals defined so far, so a
// function that calls one defined later (def f(): return g()) failed with
// "undefined: g", where Python looks g up when f runs. lateBind rewrites
// each such name in a function body into a call that looks the name up in
// the session's globals when the body runs.

// lateKey is the global the rewritten calls name: not an identifier, so
// nobody types, completes or shadows it.
const lateKey = "<late>"

// lateBind rewrites the names of f that are undefined only because they
// are defined later; it leaves f alone if any other error remains, so the
// resolver reports it as usual.
func (in *Interp) lateBind(f *syntax.File) {
	none := func(string) bool { return false }
	err := resolve.REPLChunk(f, in.globals.Has, none, starlark.Universe.Has)
	var errs resolve.ErrorList
	if !errors.As(err, &errs) {
		return
	}
	bodies := functionSpans(f)
	late := map[syntax.Position]bool{}
	for _, e := range errs {
		if !strings.HasPrefix(e.Msg, "undefined: ") || !inside(e.Pos, bodies) {
			return
		}
		late[e.Pos] = true
	}
	if _, ok := in.globals[lateKey]; !ok {
		in.globals[lateKey] = starlark.NewBuiltin("undefined", in.lookupLate)
	}
	replaceIdents(reflect.ValueOf(f), late)
}

// lookupLate returns the global named by its argument, as it is now.
func (in *Interp) lookupLate(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	name, _ := starlark.AsString(args[0])
	if v, ok := in.globals[name]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("undefined: %s (define it at the prompt, then call again)", name)
}

// functionSpans lists where the bodies of f's def statements and lambdas
// are.
func functionSpans(f *syntax.File) (spans [][2]syntax.Position) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.DefStmt:
			start, end := n.Span()
			spans = append(spans, [2]syntax.Position{start, end})
		case *syntax.LambdaExpr:
			start, end := n.Span()
			spans = append(spans, [2]syntax.Position{start, end})
		}
		return true
	})
	return spans
}

func inside(p syntax.Position, spans [][2]syntax.Position) bool {
	for _, s := range spans {
		if !before(p, s[0]) && before(p, s[1]) {
			return true
		}
	}
	return false
}

func before(a, b syntax.Position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}

// syntaxPkg is go.starlark.net/syntax's path, as reflect gives it
// (TestSyntaxPkgPath); a constant, so the package runs no code at start.
const syntaxPkg = "go.starlark.net/syntax"

// replaceIdents replaces, anywhere under v, each identifier at a position
// in late by <late>("name"). The syntax tree has no parent links, so it
// walks every field that holds an expression.
func replaceIdents(v reflect.Value, late map[syntax.Position]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			replaceIdents(v.Elem(), late)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			replaceAt(v.Index(i), late)
		}
	case reflect.Struct:
		if v.Type().PkgPath() != syntaxPkg {
			return // resolver annotations link back into the tree
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				replaceAt(v.Field(i), late)
			}
		}
	}
}

func replaceAt(field reflect.Value, late map[syntax.Position]bool) {
	if field.Type() == reflect.TypeFor[syntax.Expr]() && field.CanSet() {
		if id, ok := field.Interface().(*syntax.Ident); ok && late[id.NamePos] {
			field.Set(reflect.ValueOf(lateCall(id)))
			return
		}
	}
	replaceIdents(field, late)
}

func lateCall(id *syntax.Ident) syntax.Expr {
	arg := &syntax.Literal{Token: syntax.STRING, TokenPos: id.NamePos, Raw: strconv.Quote(id.Name), Value: id.Name}
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: id.NamePos, Name: lateKey}, Lparen: id.NamePos, Args: []syntax.Expr{arg}, Rparen: id.NamePos}
}
