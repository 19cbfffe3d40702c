// Package render turns tables and records into text: box tables fitted to a
// terminal, plain stable text off a terminal, and the official CLI's JSON.
// It knows nothing about Starlark; the shell adapts values to these types.
package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/fatih/color"
	"github.com/mattn/go-runewidth"
)

// Missing is the fixed mark drawn for absent values in generic tables.
const Missing = "—"

// Column describes one table column.
type Column struct {
	Header string
	Right  bool // right-align (numbers)
}

// Table is a titled grid of already-formatted cells.
type Table struct {
	Title   string
	Columns []Column
	Rows    [][]string
	// Omitted counts rows a caller already left out between Rows[:GapAt]
	// and Rows[GapAt:], so huge tables need not be formatted in full.
	Omitted int
	GapAt   int
}

// Options control layout.
type Options struct {
	// Width limits the table width; 0 means unlimited (never truncate).
	Width int
	// Color enables ANSI styling.
	Color bool
	// MaxRows > 0 shows only head and tail rows of longer tables, with a footer.
	MaxRows int
}

// TailRows is how many of the MaxRows are taken from the end of a long table.
const TailRows = 5

var (
	styleTitle  = color.New(color.Italic)
	styleHeader = color.New(color.Bold)
	styleKey    = color.New(color.FgHiCyan)
	styleDim    = color.New(color.Faint)
)

func init() {
	for _, s := range []*color.Color{styleTitle, styleHeader, styleKey, styleDim} {
		s.EnableColor() // the caller decides per stream via Options.Color
	}
}

// Write renders t to w. The box drawing follows the official CLI (heavy
// header, light body), so compatible subcommands print the same text.
func Write(w io.Writer, t *Table, o Options) error {
	rows, hidden := t.Rows, 0
	var tail [][]string
	if t.Omitted > 0 {
		rows, tail, hidden = t.Rows[:t.GapAt], t.Rows[t.GapAt:], t.Omitted
	} else if o.MaxRows > 0 && len(rows) > o.MaxRows {
		nTail := TailRows
		if nTail >= o.MaxRows {
			nTail = o.MaxRows / 2
		}
		head := o.MaxRows - nTail
		tail = rows[len(rows)-nTail:]
		hidden = len(rows) - o.MaxRows
		rows = rows[:head]
	}
	n := len(t.Columns)
	if n == 0 {
		_, err := io.WriteString(w, "\n")
		return err
	}
	widths := make([]int, n)
	for i, c := range t.Columns {
		widths[i] = runewidth.StringWidth(c.Header)
	}
	measure := func(rs [][]string) {
		for _, r := range rs {
			for i := 0; i < n && i < len(r); i++ {
				if cw := runewidth.StringWidth(cellText(r[i])); cw > widths[i] {
					widths[i] = cw
				}
			}
		}
	}
	measure(rows)
	measure(tail)
	if hidden > 0 && widths[0] < 1 {
		widths[0] = 1
	}
	if o.Width > 0 {
		fit(widths, o.Width-(3*n+1))
	}
	total := 1
	for _, cw := range widths {
		total += cw + 3
	}

	var b strings.Builder
	paint := func(s *color.Color, text string) string {
		if !o.Color || text == "" {
			return text
		}
		return s.Sprint(text)
	}
	if t.Title != "" {
		for _, line := range wrap(cellText(t.Title), total) {
			lw := runewidth.StringWidth(line)
			left := (total - lw) / 2
			b.WriteString(strings.Repeat(" ", left))
			b.WriteString(paint(styleTitle, line))
			b.WriteString(strings.Repeat(" ", total-lw-left))
			b.WriteByte('\n')
		}
	}
	rule := func(l, fill, mid, r string) {
		b.WriteString(l)
		for i, cw := range widths {
			if i > 0 {
				b.WriteString(mid)
			}
			b.WriteString(strings.Repeat(fill, cw+2))
		}
		b.WriteString(r)
		b.WriteByte('\n')
	}
	row := func(sep string, cells []string, header bool) {
		for i, cw := range widths {
			b.WriteString(sep)
			b.WriteByte(' ')
			text := ""
			if i < len(cells) {
				text = cells[i]
			}
			text = truncate(cellText(text), cw)
			pad := strings.Repeat(" ", cw-runewidth.StringWidth(text))
			styled := text
			switch {
			case header:
				styled = paint(styleHeader, text)
			case text == Missing:
				styled = paint(styleDim, text)
			case i == 0:
				styled = paint(styleKey, text)
			}
			if t.Columns[i].Right && !header {
				b.WriteString(pad + styled)
			} else {
				b.WriteString(styled + pad)
			}
			b.WriteByte(' ')
		}
		b.WriteString(sep)
		b.WriteByte('\n')
	}
	rule("┏", "━", "┳", "┓")
	headers := make([]string, n)
	for i, c := range t.Columns {
		headers[i] = c.Header
	}
	row("┃", headers, true)
	rule("┡", "━", "╇", "┩")
	for _, r := range rows {
		row("│", r, false)
	}
	if hidden > 0 {
		gap := make([]string, n)
		for i := range gap {
			gap[i] = "⋮"
		}
		row("│", gap, false)
		for _, r := range tail {
			row("│", r, false)
		}
	}
	rule("└", "─", "┴", "┘")
	if hidden > 0 {
		fmt.Fprintf(&b, "%s\n", paint(styleDim, fmt.Sprintf("%s of %s rows hidden; use --format json or json.encode() for all",
			Thousands(int64(hidden)), Thousands(int64(len(t.Rows)+t.Omitted)))))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fit shrinks the widest columns until the widths sum to at most avail, so
// short columns stay whole and long ones are truncated.
func fit(widths []int, avail int) {
	const minWidth = 3
	sum := 0
	for _, w := range widths {
		sum += w
	}
	for sum > avail {
		widest := 0
		for i, w := range widths {
			if w > widths[widest] {
				widest = i
			}
		}
		if widths[widest] <= minWidth {
			return
		}
		widths[widest]--
		sum--
	}
}

// flat keeps a cell on one line: line breaks and tabs are shown as marks.
var flat = strings.NewReplacer("\r\n", "⏎", "\n", "⏎", "\r", "␍", "\t", "⇥")

// cellText keeps a cell on one line and shows any other control character
// as an escape (see Printable). Every cell, header and title passes here.
func cellText(s string) string {
	if strings.ContainsAny(s, "\r\n\t") {
		s = flat.Replace(s)
	}
	return Printable(s)
}

// truncate cuts s to width display cells, ending in "…" when cut.
func truncate(s string, width int) string {
	if runewidth.StringWidth(s) <= width {
		return s
	}
	if width <= 1 {
		return runewidth.Truncate(s, width, "")
	}
	return runewidth.Truncate(s, width, "…")
}

// wrap splits text into lines of at most width cells at spaces.
func wrap(text string, width int) []string {
	if runewidth.StringWidth(text) <= width || width <= 0 {
		return []string{text}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case runewidth.StringWidth(line)+1+runewidth.StringWidth(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
		for runewidth.StringWidth(line) > width {
			cut := runewidth.Truncate(line, width, "")
			lines = append(lines, cut)
			line = line[len(cut):]
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Field is one row of a record shown vertically.
type Field struct {
	Name  string
	Value string
}

// Record is one value shown as `field  value` rows.
type Record struct {
	Title  string
	Fields []Field
}

// Table turns a record into the two-column Property/Value table that the
// official CLI prints for `info` commands.
func (r *Record) Table() *Table {
	t := &Table{Title: r.Title, Columns: []Column{{Header: "Property"}, {Header: "Value"}}}
	for _, f := range r.Fields {
		t.Rows = append(t.Rows, []string{f.Name, f.Value})
	}
	return t
}
