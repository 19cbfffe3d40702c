package builtins

import (
	"fmt"
	"runtime"
	"sync"
	"weak"

	"go.starlark.net/starlark"
)

// A list builtin that stops at its limit returns a plain list, so scripts
// index and sort it as usual; what it left out is noted here, keyed weakly by
// the list, for the prompt to put in the table title.

type capNote struct {
	len  int // the list's length when returned; a changed list loses the note
	more int // matching items left out (a lower bound unless exact)
	// exact is false when the listing was not read to its end.
	exact bool
}

var capped = struct {
	sync.Mutex
	notes map[weak.Pointer[starlark.List]]capNote
}{notes: map[weak.Pointer[starlark.List]]capNote{}}

// noteCapped records that l left out more matching items.
func noteCapped(l *starlark.List, more int, exact bool) {
	if more <= 0 && exact {
		return
	}
	k := weak.Make(l)
	capped.Lock()
	capped.notes[k] = capNote{len: l.Len(), more: more, exact: exact}
	capped.Unlock()
	runtime.AddCleanup(l, func(k weak.Pointer[starlark.List]) {
		capped.Lock()
		delete(capped.notes, k)
		capped.Unlock()
	}, k)
}

// CappedSuffix is the title suffix of a list a builtin cut at its limit,
// e.g. " (3 more not shown, use limit= to see more)", or "".
func CappedSuffix(v starlark.Value) string {
	l, ok := v.(*starlark.List)
	if !ok {
		return ""
	}
	capped.Lock()
	n, ok := capped.notes[weak.Make(l)]
	capped.Unlock()
	if !ok || n.len != l.Len() {
		return ""
	}
	switch {
	case n.exact:
		return fmt.Sprintf(" (%d more not shown, use limit= to see more)", n.more)
	case n.more > 0:
		return fmt.Sprintf(" (%d or more not shown, use limit=0 to see all)", n.more)
	}
	return " (more may exist, use limit=0 to see all)"
}
