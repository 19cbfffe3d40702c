package builtins

import (
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

// humanizeBuiltins are the builtins humanize.go defines (registryParts lists them).
var humanizeBuiltins = []entry{
	{docEntry{
		Name:      "human_size",
		Signature: "human_size(bytes)",
		Summary:   "Format a byte count like the tables do: \"0 B\", \"1.5 KB\", \"12.8 MB\" (None gives \"N/A\").",
		Example:   `human_size(sum([c.size_bytes or 0 for c in checkpoint.list(limit=0)]))`,
	}, humanSize},
}

func humanSize(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "bytes", &v); err != nil {
		return nil, err
	}
	n, err := optInt64Arg(v, "bytes")
	if err != nil {
		return nil, err
	}
	return starlark.String(render.SizePtr(n)), nil
}
