package builtins

import (
	"fmt"
	"runtime"
	"sync"
	"weak"

	"go.starlark.net/starlark"
)

// A list builtin returns a plain list, so scripts index and sort it as
// usual; what the prompt should say about it — how many items the limit
// left out, or what an empty list means — is noted here, keyed weakly by
// the list.

type capNote struct {
	len  int // the list's length when returned; a changed list loses the note
	more int // matching items left out (a lower bound unless exact)
	// exact is false when the listing was not read to its end.
	exact bool
	empty string // what an empty result displays as, e.g. "No checkpoints found"
}

// capped's notes map is made by the first note (reading and deleting from
// a nil map are fine), so the package runs no code at start.
var capped struct {
	sync.Mutex
	notes map[weak.Pointer[starlark.List]]capNote
}

// noteListing records what a listing left out (more matching items) and
// what l displays as when empty.
func noteListing(l *starlark.List, empty string, more int, exact bool) {
	if more <= 0 && exact && l.Len() > 0 {
		return
	}
	k := weak.Make(l)
	capped.Lock()
	if capped.notes == nil {
		capped.notes = map[weak.Pointer[starlark.List]]capNote{}
	}
	capped.notes[k] = capNote{len: l.Len(), more: more, exact: exact, empty: empty}
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
	n, ok := noteOf(l)
	if !ok || n.more <= 0 && n.exact {
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

// EmptyText is what an empty list from a listing builtin displays as at the
// prompt ("No checkpoints found"), or "" for any other value.
func EmptyText(v starlark.Value) string {
	l, ok := v.(*starlark.List)
	if !ok || l.Len() != 0 {
		return ""
	}
	n, _ := noteOf(l)
	return n.empty
}

func noteOf(l *starlark.List) (capNote, bool) {
	capped.Lock()
	n, ok := capped.notes[weak.Make(l)]
	capped.Unlock()
	return n, ok && n.len == l.Len()
}
