package builtins

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/lib/time"
	"go.starlark.net/starlark"
)

func init() {
	registerModule("billing", "usage reports")
	register(docEntry{
		Name:      "billing.usage",
		Signature: "billing.usage(start, end)",
		Summary:   "Hourly usage between two hour-aligned times (at most 14 days apart), one row per bucket.",
		Details:   "start and end are time values or RFC 3339 strings (a date means midnight). The value has .rows (dicts), .columns and .sessions.",
		Example:   "u = billing.usage(\"2026-11-01T00:00:00Z\", \"2026-11-08T00:00:00Z\")\nsum([r[\"token_count\"] or 0 for r in u.rows])",
	}, billingUsage)
}

// billingTable flattens usage events like the official CLI: envelope keys,
// then event_info keys with type first; columns in order of appearance.
func billingTable(resp *tinkerapi.BillingUsageResponse) (columns []string, rows []render.Object) {
	seen := map[string]bool{}
	for _, ev := range resp.Data {
		row := render.Object{
			{Key: "bucket_start", Value: jsonTime(ev.BucketStart)},
			{Key: "bucket_end", Value: jsonTime(ev.BucketEnd)},
			{Key: "base_model", Value: ev.BaseModel},
			{Key: "user_id", Value: ev.UserID},
			{Key: "user_name", Value: ev.UserName},
			{Key: "session_id", Value: ev.SessionID},
			{Key: "project_id", Value: ev.ProjectID},
		}
		row = append(row, eventInfo(ev.EventInfo)...)
		for _, m := range row {
			if !seen[m.Key] {
				seen[m.Key] = true
				columns = append(columns, m.Key)
			}
		}
		rows = append(rows, row)
	}
	return columns, rows
}

func eventInfo(e tinkerapi.BillingEventInfo) render.Object {
	obj := render.Object{{Key: "type", Value: e.Type}}
	switch e.Type {
	case "training", "sampling_sample":
		obj = append(obj, render.Member{Key: "token_count", Value: e.TokenCount})
	case "sampling_prefill":
		obj = append(obj, render.Member{Key: "cached", Value: boolPtr(e.Cached)}, render.Member{Key: "token_count", Value: e.TokenCount})
	case "checkpoint":
		obj = append(obj, render.Member{Key: "count", Value: e.Count})
	case "storage":
		obj = append(obj, render.Member{Key: "gigabyte_hours", Value: floatPtr(e.GigabyteHours)})
	default:
		if e.TokenCount != nil {
			obj = append(obj, render.Member{Key: "token_count", Value: e.TokenCount})
		}
	}
	return obj
}

func boolPtr(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

func floatPtr(f *float64) any {
	if f == nil {
		return nil
	}
	return render.RawFloat(*f)
}

func jsonTime(t *gotime.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}

// billingCell renders a flattened value like Python's str(): empty for
// null, True/False, float repr.
func billingCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case *string:
		if x == nil {
			return ""
		}
		return *x
	case *int64:
		if x == nil {
			return ""
		}
		return strconv.FormatInt(*x, 10)
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case render.RawFloat:
		return render.PyFloat(float64(x))
	}
	return fmt.Sprint(v)
}

// billingJSON is the official CLI's JSON for billing usage.
func billingJSON(resp *tinkerapi.BillingUsageResponse) render.Object {
	data := make([]any, len(resp.Data))
	_, rows := billingTable(resp)
	for i, row := range rows {
		obj := append(render.Object(nil), row[:7]...)
		obj = append(obj, render.Member{Key: "event_info", Value: row[7:]})
		data[i] = obj
	}
	sessions := make(render.Object, 0, len(resp.Sessions))
	for _, s := range resp.Sessions {
		var meta any
		if len(s.UserMetadata) > 0 {
			meta = orderedJSON(s.UserMetadata)
		}
		sessions = append(sessions, render.Member{Key: s.SessionID, Value: render.Object{{Key: "user_metadata", Value: meta}}})
	}
	return render.Object{{Key: "data", Value: data}, {Key: "sessions", Value: sessions}}
}

// orderedJSON decodes a JSON object keeping key order.
func orderedJSON(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return nil
	}
	return v
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := render.Object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, render.Member{Key: k.(string), Value: v})
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			l := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token()
			return l, err
		}
	}
	return tok, nil
}

// BillingUsage is what billing.usage returns.
type BillingUsage struct {
	Resp       *tinkerapi.BillingUsageResponse
	Start, End string // the window asked for, for the message of an empty one
}

var (
	_ Tabular           = (*BillingUsage)(nil)
	_ JSONValue         = (*BillingUsage)(nil)
	_ starlark.HasAttrs = (*BillingUsage)(nil)
)

func (u *BillingUsage) String() string {
	if len(u.Resp.Data) == 0 && u.Start != "" {
		return "No usage between " + u.Start + " and " + u.End
	}
	return "<billing usage: " + Count(len(u.Resp.Data), "row", "rows") + ">"
}
func (u *BillingUsage) Type() string          { return "billing_usage" }
func (u *BillingUsage) Freeze()               {}
func (u *BillingUsage) Truth() starlark.Bool  { return len(u.Resp.Data) > 0 }
func (u *BillingUsage) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: billing_usage") }
func (u *BillingUsage) AttrNames() []string   { return []string{"columns", "rows", "sessions"} }

func (u *BillingUsage) Attr(name string) (starlark.Value, error) {
	cols, rows := billingTable(u.Resp)
	switch name {
	case "columns":
		return strList(cols), nil
	case "rows":
		l := make([]starlark.Value, len(rows))
		for i, row := range rows {
			d := starlark.NewDict(len(cols))
			for _, c := range cols {
				v, _ := row.Get(c)
				_ = d.SetKey(starlark.String(c), starlarkOf(v))
			}
			l[i] = d
		}
		return starlark.NewList(l), nil
	case "sessions":
		d := starlark.NewDict(len(u.Resp.Sessions))
		for _, s := range u.Resp.Sessions {
			_ = d.SetKey(starlark.String(s.SessionID), starlark.String(string(s.UserMetadata)))
		}
		return d, nil
	}
	return nil, nil
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

// Table is nil when there is no usage: the value then displays as its
// String, which says so.
func (u *BillingUsage) Table(gotime.Time) *render.Table {
	cols, rows := billingTable(u.Resp)
	if len(rows) == 0 {
		return nil
	}
	t := &render.Table{Title: fmt.Sprintf("%d hourly usage row(s)", len(rows))}
	for _, c := range cols {
		t.Columns = append(t.Columns, render.Column{Header: c, Kind: billingKind(c, rows)})
	}
	for _, row := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			v, _ := row.Get(c)
			cells[i] = billingCell(v)
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// billingKind tells the table how column c may give way to a narrow
// terminal: times and identifiers stay whole, counts are numbers.
func billingKind(c string, rows []render.Object) render.Kind {
	switch c {
	case "bucket_start", "bucket_end":
		return render.Time
	case "base_model", "user_id", "user_name", "session_id", "project_id":
		return render.ID
	}
	for _, row := range rows {
		switch v, _ := row.Get(c); v.(type) {
		case *int64, int64, render.RawFloat:
			return render.Number
		}
	}
	return render.Text
}

func (u *BillingUsage) JSON() any                    { return billingJSON(u.Resp) }
func (u *BillingUsage) MarshalJSON() ([]byte, error) { return marshalJSON(u) }

func timeArg(v starlark.Value, name string) (string, error) {
	switch x := v.(type) {
	case time.Time:
		return gotime.Time(x).UTC().Format("2006-01-02T15:04:05Z"), nil
	case starlark.String:
		return BillingTimeArg(string(x))
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
	return &BillingUsage{Resp: resp, Start: start, End: end}, nil
}
