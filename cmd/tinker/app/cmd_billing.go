package app

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tinkershell/tinker/lib/ops"
)

// tinker billing usage, as the official CLI has it (docs/compat.md, "Billing").

var billingCmd = &command{
	Name:    "billing",
	Summary: "Billing and usage.",
	Help:    "Billing and usage.",
	Sub: []*command{
		{
			Name:    "usage",
			Summary: "Show hourly usage between two hour-aligned times.",
			Help: "Show hourly usage between STARTING_ON and ENDING_BEFORE (RFC 3339,\n" +
				"hour-aligned, at most 14 days apart), e.g. 2026-07-13T00:00:00Z.",
			Args: []argSpec{{Name: "STARTING_ON"}, {Name: "ENDING_BEFORE"}},
			Flags: []flagSpec{
				{Long: "--csv", Kind: flagPath, Metavar: "PATH", Help: "Write the usage rows as CSV to PATH ('-' for stdout)."},
				{Long: "--sessions-csv", Kind: flagPath, Metavar: "PATH", Help: "Write the sessions table as CSV to PATH ('-' for stdout)."},
			},
			API: billingUsage,
		},
	},
}

func billingUsage(r *apiRun) error {
	c, err := r.preflight()
	if err != nil {
		return err
	}
	start, err := ops.BillingTimeArg(r.args[0])
	if err != nil {
		return unexpected(err)
	}
	end, err := ops.BillingTimeArg(r.args[1])
	if err != nil {
		return unexpected(err)
	}
	resp, err := c.BillingUsageRaw(r.ctx, start, end)
	if err != nil {
		return err
	}
	usageCSV, sessionsCSV := r.str("csv"), r.str("sessions-csv")
	if r.has("sessions-csv") {
		rows, err := ops.BillingSessionsCSV(resp)
		if err != nil {
			return unexpected(err)
		}
		if err := r.writeCSV(sessionsCSV, rows); err != nil {
			return err
		}
	}
	if r.has("csv") {
		if err := r.writeCSV(usageCSV, ops.BillingCSV(resp)); err != nil {
			return err
		}
	}
	if r.has("csv") || r.has("sessions-csv") {
		return nil
	}
	u := &ops.BillingUsage{Resp: resp}
	if r.jsonMode() {
		return r.writeJSON(u.JSON())
	}
	t := u.Table(r.now())
	if t == nil {
		// No rows: a single newline, as the official CLI prints.
		_, err := fmt.Fprintln(r.io.Out)
		return err
	}
	return r.writeTable(t)
}

// writeCSV writes rows (header first) to path, or stdout for "-".
func (r *apiRun) writeCSV(path string, rows [][]string) error {
	if path == "-" {
		return writeExcelCSV(r.io.Out, rows)
	}
	f, err := os.Create(path)
	if err != nil {
		return unexpected(err)
	}
	if err := writeExcelCSV(f, rows); err != nil {
		f.Close()
		return unexpected(err)
	}
	if err := f.Close(); err != nil {
		return unexpected(err)
	}
	fmt.Fprintf(r.io.Err, "Wrote %d row(s) to %s\n", len(rows)-1, path)
	return nil
}

// writeExcelCSV writes Python's csv "excel" dialect: comma separated,
// fields quoted only when they hold a comma, quote or line break (quotes
// doubled), CRLF line ends. Go's encoding/csv also quotes a leading space,
// which Python does not.
func writeExcelCSV(w io.Writer, rows [][]string) error {
	var b strings.Builder
	for _, row := range rows {
		for i, f := range row {
			if i > 0 {
				b.WriteByte(',')
			}
			if strings.ContainsAny(f, ",\"\r\n") {
				b.WriteByte('"')
				b.WriteString(strings.ReplaceAll(f, `"`, `""`))
				b.WriteByte('"')
			} else {
				b.WriteString(f)
			}
		}
		b.WriteString("\r\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
