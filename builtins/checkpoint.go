package builtins

import (
	"context"
	"fmt"
	gotime "time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// checkpointBuiltins are the builtins checkpoint.go defines (registryParts lists them).
var checkpointBuiltins = []entry{
	{docEntry{
		Name:      "checkpoint.list",
		Signature: "checkpoint.list(run_id=None, limit=20, type=None)",
		Summary:   "The newest limit checkpoints of one run, or of all yours, matching type; limit=0 returns all.",
		Details:   "type is \"training\" (also \"weights\") or \"sampler\" (also \"sampler_weights\"). Returns a list of checkpoint values, newest first; it displays as a table whose title says how many more a limit left out, and works with comprehensions and sorted().",
		Example:   "cps = checkpoint.list(limit=0, type=\"sampler\")\nsorted(cps, key=lambda c: c.size_bytes or 0)[-3:]",
	}, checkpointList},
	{docEntry{
		Name:      "checkpoint.info",
		Signature: "checkpoint.info(path)",
		Summary:   "One checkpoint with its run's LoRA details, shown vertically.",
		Example:   `checkpoint.info("tinker://RUN_ID/sampler_weights/final")`,
	}, checkpointInfo},
	{docEntry{
		Name:      "checkpoint.publish",
		Signature: "checkpoint.publish(path)",
		Summary:   "Make a checkpoint public (anyone with the path can use it); returns a checkpoint_change that shows what was done.",
		Example:   `checkpoint.publish("tinker://RUN_ID/sampler_weights/final")`,
	}, checkpointPublish},
	{docEntry{
		Name:      "checkpoint.unpublish",
		Signature: "checkpoint.unpublish(path)",
		Summary:   "Make a public checkpoint private again; returns a checkpoint_change.",
		Example:   `checkpoint.unpublish("tinker://RUN_ID/sampler_weights/final")`,
	}, checkpointUnpublish},
	{docEntry{
		Name:      "checkpoint.set_ttl",
		Signature: "checkpoint.set_ttl(path, seconds)",
		Summary:   "Expire a checkpoint after seconds; None clears the expiry. Returns a checkpoint_change naming the new expiry.",
		Example:   "p = \"tinker://RUN_ID/sampler_weights/final\"\ncheckpoint.set_ttl(p, 7 * 24 * 3600)\ncheckpoint.set_ttl(p, None)",
	}, checkpointSetTTL},
}

func checkpointList(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var runID, typ string
	limit := 20
	var runV starlark.Value = starlark.None
	var typV starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "run_id?", &runV, "limit?", &limit, "type?", &typV); err != nil {
		return nil, err
	}
	var err error
	if runID, err = optString(runV, "run_id"); err != nil {
		return nil, err
	}
	if typ, err = optString(typV, "type"); err != nil {
		return nil, err
	}
	if typ != "" {
		if typ, err = ops.CheckpointType(typ); err != nil {
			return nil, err
		}
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	cps, more, exact, err := ops.NewestCheckpoints(ContextOf(thread), c, runID, typ, limit, env.countBar("Fetching checkpoints"))
	if err != nil {
		return nil, apiErr(err)
	}
	// One run's checkpoints share its details (base_model, lora_rank).
	var run *tinkerapi.TrainingRun
	if runID != "" && len(cps) > 0 {
		if run, err = c.GetTrainingRun(ContextOf(thread), runID, ""); err != nil {
			return nil, apiErr(err)
		}
	}
	out := make([]starlark.Value, len(cps))
	for i := range cps {
		out[i] = &Checkpoint{ops.Checkpoint{C: cps[i], Run: run}}
	}
	l := starlark.NewList(out)
	empty := "No checkpoints found"
	if typ != "" {
		empty = "No " + typ + " checkpoints found"
	}
	if runID != "" {
		empty += " for run " + runID
	}
	noteListing(l, empty, more, exact)
	return l, nil
}

// console is where operations draw progress: the notices stream.
func (e *Env) console() ops.Console {
	return ops.Console{W: e.Notices, TTY: e.NoticesTTY, Width: e.Width}
}

// countBar returns a progress factory drawing a bar on the notices stream
// when it is a terminal.
func (e *Env) countBar(label string) func(int) ops.Progress { return e.console().CountBar(label) }

func checkpointInfo(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var path string
	if err := unpackPath(b, args, kwargs, &path); err != nil {
		return nil, err
	}
	if _, err := tinkerapi.ParseArg(path); err != nil {
		return nil, err
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	cp, err := ops.FindCheckpoint(ContextOf(thread), c, path)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{*cp}, nil
}

// unpackPath accepts a tinker:// string or a checkpoint value.
func unpackPath(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple, path *string) error {
	var v starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &v); err != nil {
		return err
	}
	p, err := pathOf(v)
	*path = p
	return err
}

func pathOf(v starlark.Value) (string, error) {
	switch x := v.(type) {
	case starlark.String:
		return string(x), nil
	case *Checkpoint:
		return x.C.TinkerPath, nil
	}
	return "", fmt.Errorf("want a tinker:// path or a checkpoint, got %s", v.Type())
}

func checkpointPublish(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return publish(thread, b, args, kwargs, true)
}

func checkpointUnpublish(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return publish(thread, b, args, kwargs, false)
}

func publish(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple, on bool) (starlark.Value, error) {
	var path string
	if err := unpackPath(b, args, kwargs, &path); err != nil {
		return nil, err
	}
	if _, err := tinkerapi.ParseArg(path); err != nil {
		return nil, err
	}
	action := "unpublished"
	if on {
		action = "published"
	}
	return changeAfter(thread, &CheckpointChange{Path: path, Action: action},
		func(ctx context.Context, c *tinkerapi.Client) error { return ops.Publish(ctx, c, path, on) })
}

// changeAfter runs op with the backend's client and returns ch, stamped
// with the time it was done.
func changeAfter(thread *starlark.Thread, ch *CheckpointChange, op func(ctx context.Context, c *tinkerapi.Client) error) (starlark.Value, error) {
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	if err := op(ContextOf(thread), c); err != nil {
		return nil, apiErr(err)
	}
	ch.Now = env.Clock()
	return ch, nil
}

func checkpointSetTTL(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pv, sv starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "path", &pv, "seconds", &sv); err != nil {
		return nil, err
	}
	path, err := pathOf(pv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	if _, err := tinkerapi.ParseArg(path); err != nil {
		return nil, err
	}
	var ttl *int64
	if sv != starlark.None {
		n, err := starlark.AsInt32(sv)
		if err != nil {
			return nil, fmt.Errorf("%s: seconds must be an int or None, got %s", b.Name(), sv.Type())
		}
		if n <= 0 {
			return nil, fmt.Errorf("%s: seconds must be positive (None clears the expiry)", b.Name())
		}
		v := int64(n)
		ttl = &v
	}
	ch := &CheckpointChange{Path: path, Action: "expiry removed"}
	if ttl != nil {
		ch.Action = "expiry set"
	}
	v, err := changeAfter(thread, ch, func(ctx context.Context, c *tinkerapi.Client) error { return ops.SetTTL(ctx, c, path, ttl) })
	if err == nil && ttl != nil {
		exp := ch.Now.Add(gotime.Duration(*ttl) * gotime.Second)
		ch.ExpiresAt = &exp
	}
	return v, err
}

func optString(v starlark.Value, name string) (string, error) {
	switch x := v.(type) {
	case starlark.NoneType:
		return "", nil
	case starlark.String:
		return string(x), nil
	}
	return "", fmt.Errorf("%s must be a string or None, got %s", name, v.Type())
}
