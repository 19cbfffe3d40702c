package builtins

import (
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// runBuiltins are the builtins run.go defines (registryParts lists them).
var runBuiltins = []entry{
	{docEntry{
		Name:      "run.list",
		Signature: `run.list(limit=20, access_scope="owned")`,
		Summary:   "Your training runs (access_scope=\"accessible\" adds runs shared with you); limit=0 fetches all.",
		Example:   "[r.training_run_id for r in run.list(limit=0) if r.base_model.startswith(\"Qwen/\")]",
	}, runList},
	{docEntry{
		Name:      "run.info",
		Signature: "run.info(run_id_or_path)",
		Summary:   "One training run with its last training and sampler checkpoints and metadata.",
		Example:   "r = run.info(\"RUN_ID\")\nr.last_sampler_checkpoint.tinker_path",
	}, runInfo},
}

func runList(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	limit := 20
	scope := "owned"
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "limit?", &limit, "access_scope?", &scope); err != nil {
		return nil, err
	}
	if scope != "owned" && scope != "accessible" {
		return nil, fmt.Errorf("%s: access_scope must be \"owned\" or \"accessible\", got %q", b.Name(), scope)
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	runs, total, err := ops.ListRuns(ContextOf(thread), c, limit, scope, env.countBar("Fetching training runs"))
	if err != nil {
		return nil, apiErr(err)
	}
	out := make([]starlark.Value, len(runs))
	for i := range runs {
		out[i] = &Run{ops.Run{R: runs[i]}}
	}
	l := starlark.NewList(out)
	noteListing(l, "No training runs found", total-len(runs), true)
	return l, nil
}

func runInfo(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "run_id_or_path", &v); err != nil {
		return nil, err
	}
	var id string
	switch x := v.(type) {
	case starlark.String:
		id = string(x)
	case *Checkpoint:
		id = x.C.RunID()
	case *Run:
		id = x.R.TrainingRunID
	default:
		return nil, fmt.Errorf("%s: want a run id, a tinker:// path or a checkpoint, got %s", b.Name(), v.Type())
	}
	if strings.HasPrefix(id, "tinker://") {
		p, err := tinkerapi.ParseArg(id)
		if err != nil {
			return nil, err
		}
		id = p.RunID
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	r, err := c.GetTrainingRun(ContextOf(thread), id, "owned")
	if err != nil {
		return nil, apiErr(err)
	}
	return &Run{ops.Run{R: *r}}, nil
}
