package render

import (
	"strings"

	"github.com/mattn/go-runewidth"
)

// A table too wide for the terminal first leaves out the columns its
// maker marked as droppable (Column.Drop, highest first), then, if its
// whole columns still do not fit, draws each row as a block. A table of
// training steps thus stays a table at 60 columns, with the columns that
// matter; the footer names those left out, and JSON has them all.

// narrowed is t without the droppable columns it must lose to fit width
// (0: no limit), and their headers.
func narrowed(t *Table, width int) (*Table, []string) {
	var dropped []string
	for width > 0 && !fitsWidth(t, width) {
		i := nextDropped(t.Columns)
		if i < 0 {
			break
		}
		dropped = append(dropped, t.Columns[i].Header)
		t = withoutColumn(t, i)
	}
	return t, dropped
}

// nextDropped is the droppable column to leave out first, or -1.
func nextDropped(cols []Column) int {
	best := -1
	for i, c := range cols {
		if c.Drop > 0 && (best < 0 || c.Drop > cols[best].Drop) {
			best = i
		}
	}
	return best
}

func withoutColumn(t *Table, i int) *Table {
	out := *t
	out.Columns = append(append([]Column(nil), t.Columns[:i]...), t.Columns[i+1:]...)
	out.Rows = make([][]string, len(t.Rows))
	for r, row := range t.Rows {
		if i < len(row) {
			row = append(append([]string(nil), row[:i]...), row[i+1:]...)
		}
		out.Rows[r] = row
	}
	return &out
}

// fitsWidth reports whether t's columns fit side by side in width, as
// Write would fit them.
func fitsWidth(t *Table, width int) bool {
	n := len(t.Columns)
	rows := cellTexts(t.Rows, n)
	avail := width - (3*n + 1)
	widths, mins, kinds := make([]int, n), make([]int, n), make([]Kind, n)
	for i, c := range t.Columns {
		header := cellText(c.Header)
		kinds[i] = c.kind()
		widths[i] = runewidth.StringWidth(header)
		cells := make([]string, len(rows))
		for r, row := range rows {
			cells[r] = row[i]
			widths[i] = max(widths[i], runewidth.StringWidth(row[i]))
		}
		mins[i] = minWidth(kinds[i], widths[i], max(minTextWidth, avail/max(n, 1)), header, cells)
	}
	return fit(widths, mins, kinds, avail)
}

// droppedNote is the footer line naming the columns left out.
func droppedNote(dropped []string) string {
	return strings.Join(dropped, ", ") + " left out for width; widen the terminal, or use --format json or json.encode() for every column"
}
