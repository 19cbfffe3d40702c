package builtins

import (
	"fmt"
	gotime "time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/lib/time"
	"go.starlark.net/starlark"
)

// billingBuiltins are the builtins billing.go defines (registryParts lists them).
var billingBuiltins = []entry{
	{docEntry{
		Name:      "billing.usage",
		Signature: "billing.usage(start, end)",
		Summary:   "Hourly usage between two hour-aligned times (at most 14 days apart), one row per bucket.",
		Details:   "start and end are time values or RFC 3339 strings (a date means midnight). The value has .rows (dicts), .columns and .sessions.",
		Example:   "u = billing.usage(\"2026-11-01T00:00:00Z\", \"2026-11-08T00:00:00Z\")\nsum([r[\"token_count\"] or 0 for r in u.rows])",
	}, billingUsage},
}

// BillingUsage is what billing.usage returns.
type BillingUsage struct{ ops.BillingUsage }

var (
	_ Tabular           = (*BillingUsage)(nil)
	_ JSONValue         = (*BillingUsage)(nil)
	_ starlark.HasAttrs = (*BillingUsage)(nil)
)

func (u *BillingUsage) String() string {
	if len(u.Resp.Data) == 0 && u.Start != "" {
		return "No usage between " + u.Start + " and " + u.End
	}
	return "<billing usage: " + ops.Count(len(u.Resp.Data), "row", "rows") + ">"
}
func (u *BillingUsage) Type() string          { return "billing_usage" }
func (u *BillingUsage) Freeze()               {}
func (u *BillingUsage) Truth() starlark.Bool  { return len(u.Resp.Data) > 0 }
func (u *BillingUsage) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: billing_usage") }

func (u *BillingUsage) AttrNames() []string                      { return billingAttrs.names(u) }
func (u *BillingUsage) Attr(name string) (starlark.Value, error) { return billingAttrs.get(u, name) }

var billingAttrs = attrTable[*BillingUsage]{
	{name: "columns", doc: "the column names, in order", value: func(u *BillingUsage) starlark.Value {
		cols, _ := ops.BillingTable(u.Resp)
		return strList(cols)
	}},
	{name: "rows", doc: "one dict per hourly bucket, keyed by column", value: func(u *BillingUsage) starlark.Value {
		cols, rows := ops.BillingTable(u.Resp)
		l := make([]starlark.Value, len(rows))
		for i, row := range rows {
			d := starlark.NewDict(len(cols))
			for _, c := range cols {
				v, _ := row.Get(c)
				_ = d.SetKey(starlark.String(c), starlarkOf(v))
			}
			l[i] = d
		}
		return starlark.NewList(l)
	}},
	{name: "sessions", doc: "a dict of session id to its user metadata", value: func(u *BillingUsage) starlark.Value {
		d := starlark.NewDict(len(u.Resp.Sessions))
		for _, s := range u.Resp.Sessions {
			_ = d.SetKey(starlark.String(s.SessionID), starlark.String(string(s.UserMetadata)))
		}
		return d
	}},
}

func starlarkOf(v any) starlark.Value {
	switch x := v.(type) {
	case nil:
		return starlark.None
	case *string:
		if x == nil {
			return starlark.None
		}
		return starlark.String(*x)
	case *int64:
		if x == nil {
			return starlark.None
		}
		return starlark.MakeInt64(*x)
	case string:
		if t, err := gotime.Parse(gotime.RFC3339, x); err == nil && len(x) == 20 {
			return time.Time(t)
		}
		return starlark.String(x)
	case bool:
		return starlark.Bool(x)
	case render.RawFloat:
		return starlark.Float(x)
	}
	return starlark.String(fmt.Sprint(v))
}

func (u *BillingUsage) MarshalJSON() ([]byte, error) { return marshalJSON(u) }

func timeArg(v starlark.Value, name string) (string, error) {
	switch x := v.(type) {
	case time.Time:
		return gotime.Time(x).UTC().Format("2006-01-02T15:04:05Z"), nil
	case starlark.String:
		return ops.BillingTimeArg(string(x))
	}
	return "", fmt.Errorf("%s must be a time or an RFC 3339 string, got %s", name, v.Type())
}

func billingUsage(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var sv, ev starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "start", &sv, "end", &ev); err != nil {
		return nil, err
	}
	start, err := timeArg(sv, "start")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	end, err := timeArg(ev, "end")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	resp, err := c.BillingUsageRaw(ContextOf(thread), start, end)
	if err != nil {
		return nil, apiErr(err)
	}
	return &BillingUsage{ops.BillingUsage{Resp: resp, Start: start, End: end}}, nil
}
