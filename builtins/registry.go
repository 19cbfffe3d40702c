package builtins

import (
	"slices"
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

// registryParts are the builtins, one table per file, in file order. The
// tables are literals the compiler lays out as data: filling a registry by
// calls from init functions ran some 25 KB of code at every start.
var registryParts = [...][]entry{
	batchBuiltins, billingBuiltins, checkpointBuiltins, coreBuiltins,
	datumBuiltins, deleteBuiltins, doctorBuiltins, downloadBuiltins, dpoBuiltins,
	evaluateBuiltins, exportBuiltins, hubBuiltins, humanizeBuiltins, ioBuiltins,
	lrforBuiltins, modelsBuiltins, recordBuiltins, rlBuiltins, runBuiltins,
	sampleBuiltins, saveBuiltins, sessionBuiltins, sftBuiltins, sumBuiltins,
	tokenizeBuiltins, toolsBuiltins, trainingBuiltins,
}

// registry yields every builtin, in registryParts' order.
func registry(yield func(entry) bool) {
	for _, part := range registryParts {
		for _, e := range part {
			if !yield(e) {
				return
			}
		}
	}
}

// moduleDocs are the documented modules, sorted by name.
var moduleDocs = []moduleDoc{
	{Name: "billing", Summary: "usage reports"},
	{Name: "checkpoint", Summary: "list, inspect, publish, expire, delete and download checkpoints"},
	{Name: "io", Summary: "read and write text and JSON Lines files: io.read_jsonl(), io.write_jsonl(), io.read_text(), ..."},
	{Name: "json", Summary: "encode, decode and indent JSON (json.encode of a tinker value gives the official CLI's JSON)"},
	{Name: "math", Summary: "math functions and constants"},
	{Name: "run", Summary: "list and inspect training runs"},
	{Name: "session", Summary: "sessions: list, inspect, export traces"},
	{Name: "time", Summary: "times and durations: time.now(), time.parse_time(), time.parse_duration(), ..."},
}

// findModule is the documentation of the module named name.
func findModule(name string) (moduleDoc, bool) {
	for _, m := range moduleDocs {
		if m.Name == name {
			return m, true
		}
	}
	return moduleDoc{}, false
}

// allDocs returns every builtin's documentation in a stable order: top-level
// functions first, then modules alphabetically.
func allDocs() []docEntry {
	var out []docEntry
	for e := range registry {
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
	out := slices.Clone(moduleDocs)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// lookupDoc finds a builtin's documentation by dotted name.
func lookupDoc(name string) (docEntry, bool) {
	for e := range registry {
		if e.doc.Name == name {
			return e.doc, true
		}
	}
	return docEntry{}, false
}
