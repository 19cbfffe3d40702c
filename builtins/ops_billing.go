package builtins

import (
	"bytes"
	"fmt"
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
	cols, rows := billingTable(resp)
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
