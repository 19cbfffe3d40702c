package builtins

import (
	"sort"
	"strings"

	"go.starlark.net/starlark"
)

// docEntry documents one builtin. The same table feeds help() at the prompt and
// the README's reference section (`tinker help --markdown`).
type docEntry struct {
	Name      string // dotted name, e.g. "checkpoint.list"
	Signature string // e.g. "checkpoint.list(run_id=None, limit=20, type=None)"
	Summary   string // one line
	Details   string // optional paragraphs
	// DetailsFrom, if set, makes Details when help reads them: for text
	// derived from another table (the renderer names), so that is not
	// computed at every start.
	DetailsFrom func() string
	Example     string // one or more lines of Starlark
	// ExampleNeeds names what the example needs beyond the local server
	// (e.g. the Hugging Face Hub); the test that runs every example skips
	// it, saying so.
	ExampleNeeds string
	// Learns is a Starlark condition that holds once a training example
	// has visibly learned; the test that runs the example checks it.
	Learns string
}

// details are the entry's optional paragraphs.
func (d docEntry) details() string {
	if d.DetailsFrom != nil {
		return d.DetailsFrom()
	}
	return d.Details
}

// Module documents a module as a whole.
type moduleDoc struct {
	Name    string
	Summary string
}

type builtinFn = func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)

type entry struct {
	doc docEntry
	fn  builtinFn
}

var (
	// registry starts in registryInit's room, so the init functions fill
	// it without growing a slice at every start; past it, append allocates.
	registry     = registryInit[:0]
	registryInit [64]entry
	moduleDocs   = make(map[string]moduleDoc, 16)
)

// register adds a builtin with its documentation. Dotted names become
// members of a module named by the prefix.
func register(doc docEntry, fn builtinFn) {
	registry = append(registry, entry{doc, fn})
}

func registerModule(name, summary string) {
	moduleDocs[name] = moduleDoc{Name: name, Summary: summary}
}

// allDocs returns every builtin's documentation in a stable order: top-level
// functions first, then modules alphabetically.
func allDocs() []docEntry {
	out := make([]docEntry, 0, len(registry))
	for _, e := range registry {
		out = append(out, e.doc)
	}
	sort.SliceStable(out, func(i, j int) bool {
		mi, mj := strings.Contains(out[i].Name, "."), strings.Contains(out[j].Name, ".")
		if mi != mj {
			return !mi
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// moduleList returns the documented modules sorted by name.
func moduleList() []moduleDoc {
	out := make([]moduleDoc, 0, len(moduleDocs))
	for _, m := range moduleDocs {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// lookupDoc finds a builtin's documentation by dotted name.
func lookupDoc(name string) (docEntry, bool) {
	for _, e := range registry {
		if e.doc.Name == name {
			return e.doc, true
		}
	}
	return docEntry{}, false
}
