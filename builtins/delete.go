package builtins

import (
	"fmt"
	gotime "time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/lib/time"
	"go.starlark.net/starlark"
)

// deleteBuiltins are the builtins delete.go defines (registryParts lists them).
var deleteBuiltins = []entry{
	{docEntry{
		Name:      "checkpoint.delete",
		Signature: "checkpoint.delete(*paths, run_id=None, type=None, before=None, after=None, yes=False, dry_run=False)",
		Summary:   "Delete checkpoints by path, or a run's checkpoints filtered by type and time.",
		Details: "before/after take a time value or an ISO 8601 string (date-only means midnight UTC) and compare strictly.\n" +
			"At the prompt it shows what will go and asks; in scripts and -c it refuses unless yes=True.\n" +
			"dry_run=True returns what would be deleted without deleting. Deletions run 32 at a time;\n" +
			"Ctrl-C stops submitting more. The result lists what was deleted and what failed.",
		Example: "checkpoint.delete(run_id=\"RUN_ID\", type=\"training\", before=\"2026-01-01\", dry_run=True)\n" +
			"old = [c for c in checkpoint.list(limit=0) if c.time < time.parse_time(\"2026-01-01T00:00:00Z\")]\n" +
			"if old: checkpoint.delete([c.tinker_path for c in old], yes=True)",
	}, checkpointDelete},
}

// DeleteResult is what checkpoint.delete returns.
type DeleteResult struct{ ops.DeleteResult }

var (
	_ Tabular           = (*DeleteResult)(nil)
	_ JSONValue         = (*DeleteResult)(nil)
	_ starlark.HasAttrs = (*DeleteResult)(nil)
)

func (d *DeleteResult) String() string {
	if d.NoMatch != "" {
		return d.NoMatch
	}
	if d.Cancelled {
		return "<delete cancelled>"
	}
	if d.DryRun {
		return "<delete dry run: " + ops.Count(len(d.Planned), "checkpoint", "checkpoints") + ">"
	}
	return fmt.Sprintf("<delete: %d deleted, %d failed>", len(d.Deleted), len(d.Failed))
}
func (d *DeleteResult) Type() string          { return "delete_result" }
func (d *DeleteResult) Freeze()               {}
func (d *DeleteResult) Truth() starlark.Bool  { return len(d.Failed) == 0 && len(d.Skipped) == 0 }
func (d *DeleteResult) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: delete_result") }

// strList is l as a Starlark list of strings.
func strList(l []string) *starlark.List {
	v := make([]starlark.Value, len(l))
	for i, s := range l {
		v[i] = starlark.String(s)
	}
	return starlark.NewList(v)
}

func (d *DeleteResult) AttrNames() []string                      { return deleteAttrs.names(d) }
func (d *DeleteResult) Attr(name string) (starlark.Value, error) { return deleteAttrs.get(d, name) }

var deleteAttrs = attrTable[*DeleteResult]{
	{name: "cancelled", doc: "whether the confirmation was answered no", value: func(d *DeleteResult) starlark.Value { return starlark.Bool(d.Cancelled) }},
	{name: "deleted", doc: "the paths deleted", value: func(d *DeleteResult) starlark.Value { return strList(d.Deleted) }},
	{name: "deleted_count", doc: "the number of paths deleted", value: func(d *DeleteResult) starlark.Value { return starlark.MakeInt(len(d.Deleted)) }},
	{name: "dry_run", doc: "whether this was a dry run (nothing deleted)", value: func(d *DeleteResult) starlark.Value { return starlark.Bool(d.DryRun) }},
	{name: "failed", doc: `a list of {"tinker_path", "error"} dicts`, value: func(d *DeleteResult) starlark.Value {
		l := make([]starlark.Value, len(d.Failed))
		for i, f := range d.Failed {
			dict := starlark.NewDict(2)
			_ = dict.SetKey(starlark.String("tinker_path"), starlark.String(f.Path))
			_ = dict.SetKey(starlark.String("error"), starlark.String(f.Error))
			l[i] = dict
		}
		return starlark.NewList(l)
	}},
	{name: "planned", doc: "the paths a dry run or a cancelled delete would have deleted", value: func(d *DeleteResult) starlark.Value { return strList(d.Planned) }},
	{name: "skipped", doc: "the paths not attempted because Ctrl-C stopped the delete", value: func(d *DeleteResult) starlark.Value { return strList(d.Skipped) }},
}

func (d *DeleteResult) MarshalJSON() ([]byte, error) { return marshalJSON(d) }

// dateArg accepts a time value, an ISO 8601 string or None.
func dateArg(v starlark.Value, name string) (*gotime.Time, error) {
	switch x := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case time.Time:
		t := gotime.Time(x)
		return &t, nil
	case starlark.String:
		t, err := ops.ParseDate(string(x))
		if err != nil {
			return nil, err
		}
		return &t, nil
	}
	return nil, fmt.Errorf("%s must be a time, an ISO 8601 string or None, got %s", name, v.Type())
}

func checkpointDelete(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var runV, typV, beforeV, afterV starlark.Value = starlark.None, starlark.None, starlark.None, starlark.None
	var yes, dryRun bool
	if err := starlark.UnpackArgs(b.Name(), nil, kwargs, "run_id?", &runV, "type?", &typV, "before?", &beforeV, "after?", &afterV, "yes?", &yes, "dry_run?", &dryRun); err != nil {
		return nil, err
	}
	var paths []string
	for _, a := range args {
		if l, ok := a.(*starlark.List); ok { // delete(list) is forgiving: spread it
			for i := 0; i < l.Len(); i++ {
				p, err := pathOf(l.Index(i))
				if err != nil {
					return nil, fmt.Errorf("%s: %w", b.Name(), err)
				}
				paths = append(paths, p)
			}
			continue
		}
		p, err := pathOf(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
		paths = append(paths, p)
	}
	runID, err := optString(runV, "run_id")
	if err != nil {
		return nil, err
	}
	typ, err := optString(typV, "type")
	if err != nil {
		return nil, err
	}
	before, err := dateArg(beforeV, "before")
	if err != nil {
		return nil, err
	}
	after, err := dateArg(afterV, "after")
	if err != nil {
		return nil, err
	}
	switch {
	case len(paths) == 0 && runID == "":
		return nil, fmt.Errorf("%s: give checkpoint paths or run_id=", b.Name())
	case len(paths) > 0 && runID != "":
		return nil, fmt.Errorf("%s: give either checkpoint paths or run_id=, not both", b.Name())
	case runID == "" && (typ != "" || before != nil || after != nil):
		return nil, fmt.Errorf("%s: type=, before= and after= filter a run's checkpoints; add run_id=", b.Name())
	}
	for _, p := range paths {
		if _, err := tinkerapi.ParseArg(p); err != nil {
			return nil, err
		}
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	ctx := ContextOf(thread)
	plan, err := ops.PlanDelete(ctx, c, paths, ops.DeleteFilter{RunID: runID, Type: typ, Before: before, After: after}, env.Clock())
	if err != nil {
		return nil, apiErr(err)
	}
	paths = plan.Paths
	if len(paths) == 0 {
		// The official CLI's words for the same outcome.
		return &DeleteResult{ops.DeleteResult{DryRun: dryRun, NoMatch: fmt.Sprintf("No checkpoints found for run %s matching filters", runID)}}, nil
	}
	if dryRun {
		return &DeleteResult{ops.DeleteResult{DryRun: dryRun, Planned: paths}}, nil
	}
	if !yes {
		if !env.Interactive || env.Confirm == nil {
			return nil, fmt.Errorf("%s: refusing to delete %d checkpoint(s) without confirmation; pass yes=True (or dry_run=True to see them)", b.Name(), len(paths))
		}
		ok, err := env.Confirm(plan.Warning() + plan.Question())
		if err != nil {
			return nil, err
		}
		if !ok {
			return &DeleteResult{ops.DeleteResult{Cancelled: true, Planned: paths}}, nil
		}
	}
	prog := env.countBar("Deleting checkpoints")(len(paths))
	deleted, failed, skipped := ops.DeleteCheckpoints(ctx, c, paths, prog)
	prog.Finish()
	return &DeleteResult{ops.DeleteResult{Deleted: deleted, Failed: failed, Skipped: skipped}}, nil
}
