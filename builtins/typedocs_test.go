package builtins

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/doctor"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/train"
	"go.starlark.net/starlark"
)

// typeNamesInSource finds every `func (…) Type() string { return "name" }` in
// the package's own files, so a new value type cannot go undocumented.
func typeNamesInSource(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	names := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Type" || fn.Body == nil || len(fn.Body.List) != 1 {
				continue
			}
			ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
			if !ok || len(ret.Results) != 1 {
				continue
			}
			lit, ok := ret.Results[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Errorf("%s: %s.Type() does not return a string literal", fset.Position(fn.Pos()), fn.Recv.List[0].Type)
				continue
			}
			name, _ := strconv.Unquote(lit.Value)
			names[name] = true
		}
	}
	return names
}

// valueSamples holds one instance of every value type, with every attribute
// it can have (a checkpoint with its run's details, as checkpoint.info gives).
var valueSamples = []starlark.Value{
	&Checkpoint{ops.Checkpoint{Run: &tinkerapi.TrainingRun{}}},
	&Run{},
	&Session{},
	&TraceResult{},
	&SampleResult{},
	&Sequence{},
	&tokenizerValue{},
	&renderedValue{},
	&DownloadResult{},
	&ExportResult{},
	&DeleteResult{},
	&CheckpointChange{},
	&BillingUsage{},
	&Model{},
	&Doctor{R: &doctor.Report{}},
	&BatchResult{},
	&TrainingClient{},
	&Datum{},
	&PassResult{},
	&SFTRun{},
	DPORun{&TrainRun[train.DPOMetrics]{R: &train.DPOResult{}}},
	RLRun{&TrainRun[train.RLMetrics]{R: &train.RLResult{}}},
	&Evaluation{R: &train.EvalResult{}},
	&HubPush{},
	&tableValue{},
	&recordMap{},
	helpText(""),
}

func TestEveryValueTypeIsDocumented(t *testing.T) {
	inSource := typeNamesInSource(t)
	if len(inSource) < len(valueSamples) {
		t.Fatalf("found only %d Type() methods in source, fewer than the %d samples", len(inSource), len(valueSamples))
	}
	sampled := map[string]starlark.Value{}
	for _, v := range valueSamples {
		sampled[v.Type()] = v
	}
	for name := range inSource {
		if _, ok := lookupTypeDoc(name); !ok {
			t.Errorf("value type %q has no entry in typeDocs", name)
		}
		if _, ok := sampled[name]; !ok {
			t.Errorf("value type %q has no instance in valueSamples", name)
		}
	}
	seen := map[string]bool{}
	for _, d := range typeDocs.Get() {
		if seen[d.Name] {
			t.Errorf("typeDocs lists %q twice", d.Name)
		}
		seen[d.Name] = true
		if !inSource[d.Name] {
			t.Errorf("typeDocs documents %q, which no Type() method returns", d.Name)
		}
		if d.Summary == "" || strings.Contains(d.Summary, "\n") {
			t.Errorf("%s: summary must be one non-empty line", d.Name)
		}
		v, ok := sampled[d.Name]
		if !ok {
			continue
		}
		var documented []string
		for _, a := range d.Attrs {
			if a.Doc == "" {
				t.Errorf("%s.%s has no description", d.Name, a.Name)
			}
			documented = append(documented, a.Name)
		}
		sort.Strings(documented)
		var actual []string
		if h, ok := v.(starlark.HasAttrs); ok {
			actual = h.AttrNames()
			sort.Strings(actual)
		}
		if !slices.Equal(documented, actual) {
			t.Errorf("%s: documented attributes %v, AttrNames() %v", d.Name, documented, actual)
		}
	}
}

// A checkpoint from checkpoint.list has no run details: its attributes are a
// subset of the documented ones.
func TestCheckpointWithoutRunAttrsDocumented(t *testing.T) {
	d, _ := lookupTypeDoc("checkpoint")
	for _, n := range (&Checkpoint{}).AttrNames() {
		if !slices.ContainsFunc(d.Attrs, func(a attrDoc) bool { return a.Name == n }) {
			t.Errorf("checkpoint attribute %q undocumented", n)
		}
	}
}

func TestHelpOfValue(t *testing.T) {
	thread := &starlark.Thread{}
	help := starlark.NewBuiltin("help", helpFn)
	got, err := starlark.Call(thread, help, starlark.Tuple{&Sequence{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := got.(helpText).Text()
	for _, want := range []string{"sequence value", "mean_logprob", "the mean of logprobs"} {
		if !strings.Contains(text, want) {
			t.Errorf("help(sequence) lacks %q:\n%s", want, text)
		}
	}
	if _, err := starlark.Call(thread, help, starlark.Tuple{starlark.NewList(nil)}, nil); err == nil || !strings.Contains(err.Error(), "no documentation for a list") {
		t.Errorf("help([]) = %v, want no documentation for a list", err)
	}
}
