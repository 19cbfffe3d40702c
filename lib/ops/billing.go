package ops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Billing usage operations shared by billing.usage and
// `tinker billing usage`.

// BillingTimeArg turns a user's time into the query form the official CLI
// sends: UTC as ...Z, other offsets kept, naive and date-only without zone.
func BillingTimeArg(s string) (string, error) {
	s = strings.TrimSpace(s)
	for _, l := range []string{gotime.RFC3339Nano, "2006-01-02T15:04:05Z07:00"} {
		if t, err := gotime.Parse(l, s); err == nil {
			_, off := t.Zone()
			if off == 0 {
				return t.UTC().Format("2006-01-02T15:04:05Z"), nil
			}
			return t.Format("2006-01-02T15:04:05-07:00"), nil
		}
	}
	for _, l := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := gotime.Parse(l, s); err == nil {
			return t.Format("2006-01-02T15:04:05"), nil
		}
	}
	return "", fmt.Errorf("invalid datetime %q: use RFC 3339, e.g. 2026-07-13T05:00:00Z", s)
}

// BillingCSV is the official CLI's usage CSV: a header row of the flattened
// columns, then one row per event with cells as billingCell renders them.
func BillingCSV(resp *tinkerapi.BillingUsageResponse) [][]string {
	cols, rows := BillingTable(resp)
	out := [][]string{cols}
	for _, row := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			v, _ := row.Get(c)
			cells[i] = billingCell(v)
		}
		out = append(out, cells)
	}
	return out
}

// BillingSessionsCSV is the official CLI's sessions CSV: session_id and the
// metadata as JSON with Python's default separators (empty when null).
func BillingSessionsCSV(resp *tinkerapi.BillingUsageResponse) ([][]string, error) {
	out := [][]string{{"session_id", "user_metadata"}}
	for _, s := range resp.Sessions {
		meta := ""
		if len(s.UserMetadata) > 0 {
			var b bytes.Buffer
			if err := render.WriteJSON(&b, orderedJSON(s.UserMetadata), render.JSONOptions{Compact: true}); err != nil {
				return nil, fmt.Errorf("session %s metadata: %w", s.SessionID, err)
			}
			meta = strings.TrimSuffix(b.String(), "\n")
		}
		out = append(out, []string{s.SessionID, meta})
	}
	return out, nil
}

// BillingTable flattens usage events like the official CLI: envelope keys,
// then event_info keys with type first; columns in order of appearance.
func BillingTable(resp *tinkerapi.BillingUsageResponse) (columns []string, rows []render.Object) {
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
	_, rows := BillingTable(resp)
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

// BillingUsage is a usage report and the window it was asked for.
type BillingUsage struct {
	Resp       *tinkerapi.BillingUsageResponse
	Start, End string // the window asked for, for the message of an empty one
}

// Table is nil when there is no usage: the value then displays as its
// String, which says so.
func (u *BillingUsage) Table(gotime.Time) *render.Table {
	cols, rows := BillingTable(u.Resp)
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

func (u *BillingUsage) JSON() any { return billingJSON(u.Resp) }
