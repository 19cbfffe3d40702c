// Package render turns tables and records into text: box tables fitted to a
// terminal, plain stable text off a terminal, and the official CLI's JSON.
// It knows nothing about Starlark; the shell adapts values to these types.
package render

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/fatih/color"
	"github.com/mattn/go-runewidth"
)

// Missing is the fixed mark drawn for absent values in generic tables.
const Missing = "—"

// Column describes one table column.
type Column struct {
	Header string
	Right  bool // right-align (numbers)
	Kind   Kind // how the column gives way to a narrow width
	// Drop > 0 lets a table too wide for the terminal leave the column
	// out, highest Drop first, before it turns into blocks (narrow.go).
	Drop int
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
	// HeadTail asks for head and tail rows of a long table on a terminal
	// even where tables are otherwise drawn whole (a run's steps).
	HeadTail bool
	// Vertical marks a record's Property/Value table: too narrow for its
	// box it is drawn as one block of `property  value` lines.
	Vertical bool
	// PipedWidth, when set, is the width the table is fitted to off a
	// terminal too, for reports whose long findings would otherwise make
	// lines hundreds of columns wide (doctor).
	PipedWidth int
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

// styleSet is the tables' styles, made on first use rather than at every
// start (docs/architecture.md, "Where a change goes": package-level state).
type styleSet struct{ title, header, key, dim *color.Color }

var (
	stylesOnce sync.Once
	stylesMade styleSet
)

func styles() *styleSet {
	stylesOnce.Do(func() {
		stylesMade = styleSet{color.New(color.Italic), color.New(color.Bold), color.New(color.FgHiCyan), color.New(color.Faint)}
		for _, s := range [...]*color.Color{stylesMade.title, stylesMade.header, stylesMade.key, stylesMade.dim} {
			s.EnableColor() // the caller decides per stream via Options.Color
		}
	})
	return &stylesMade
}

// Write renders t to w. The box drawing follows the official CLI (heavy
// header, light body), so compatible subcommands print the same text.
// Fitted to a width, columns give way by kind (see Kind); when the columns
// that must stay whole do not fit, each row is drawn as a block instead.
func Write(w io.Writer, t *Table, o Options) error {
	t, dropped := narrowed(t, o.Width)
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
		return writeEmpty(w, t.Title)
	}
	rows, tail = cellTexts(rows, n), cellTexts(tail, n)
	headers := make([]string, n)
	kinds := make([]Kind, n)
	widths := make([]int, n)
	columns := make([][]string, n) // every shown cell of each column
	for i, c := range t.Columns {
		headers[i] = cellText(c.Header)
		kinds[i] = c.kind()
		widths[i] = runewidth.StringWidth(headers[i])
		for _, r := range append(rows[:len(rows):len(rows)], tail...) {
			columns[i] = append(columns[i], r[i])
			widths[i] = max(widths[i], runewidth.StringWidth(r[i]))
		}
	}
	if hidden > 0 && widths[0] < 1 {
		widths[0] = 1
	}
	var b strings.Builder
	paint := func(s *color.Color, text string) string {
		if !o.Color || text == "" {
			return text
		}
		return s.Sprint(text)
	}
	shortened := false // a path lost its middle: say how to see it whole
	footer := func() {
		if len(dropped) > 0 {
			for _, l := range wrap(droppedNote(dropped), o.Width) {
				fmt.Fprintf(&b, "%s\n", paint(styles().dim, l))
			}
		}
		if shortened {
			for _, l := range wrap("… marks a shortened path; for whole paths widen the terminal, or use --format json or json.encode()", o.Width) {
				fmt.Fprintf(&b, "%s\n", paint(styles().dim, l))
			}
		}
		if hidden > 0 {
			note := fmt.Sprintf("%s of %s rows hidden; use --format json or json.encode() for all",
				Thousands(int64(hidden)), Thousands(int64(len(t.Rows)+t.Omitted)))
			for _, l := range wrap(note, o.Width) {
				fmt.Fprintf(&b, "%s\n", paint(styles().dim, l))
			}
		}
	}
	elide := make([]bool, n)
	if o.Width > 0 {
		avail := o.Width - (3*n + 1)
		mins := make([]int, n)
		for i := range widths {
			mins[i] = minWidth(kinds[i], widths[i], max(minTextWidth, avail/n), headers[i], columns[i])
		}
		if !fit(widths, mins, kinds, avail) {
			writeBlocks(&b, t.Title, blockShape(t, headers, kinds, rows, tail), o.Width, paint)
			footer()
			_, err := io.WriteString(w, b.String())
			return err
		}
		for i := range elide {
			elide[i] = kinds[i] == Path && elisionKeepsRowsApart(columns[i], widths[i])
			shortened = shortened || elide[i] && widths[i] < runewidth.StringWidth(longest(columns[i]))
			if kinds[i] == Path && !elide[i] && widths[i] < longestUnbreakable(columns[i]) {
				// Folding would split a path: blocks keep it whole.
				writeBlocks(&b, t.Title, blockShape(t, headers, kinds, rows, tail), o.Width, paint)
				footer()
				_, err := io.WriteString(w, b.String())
				return err
			}
		}
	}
	total := 1
	for _, cw := range widths {
		total += cw + 3
	}

	if t.Title != "" {
		for _, line := range wrap(cellText(t.Title), total) {
			lw := runewidth.StringWidth(line)
			left := max(0, (total-lw)/2) // a whole path may be wider
			b.WriteString(strings.Repeat(" ", left))
			b.WriteString(paint(styles().title, line))
			b.WriteString(strings.Repeat(" ", max(0, total-lw-left)))
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
		lines := make([][]string, n)
		height := 1
		for i, cw := range widths {
			if header {
				lines[i] = wrap(cells[i], cw)
			} else {
				lines[i] = layoutCell(cells[i], kinds[i], cw, elide[i])
			}
			height = max(height, len(lines[i]))
		}
		for l := 0; l < height; l++ {
			for i, cw := range widths {
				b.WriteString(sep)
				b.WriteByte(' ')
				text := ""
				if l < len(lines[i]) {
					text = lines[i][l]
				}
				pad := strings.Repeat(" ", max(0, cw-runewidth.StringWidth(text)))
				styled := text
				switch {
				case header:
					styled = paint(styles().header, text)
				case text == Missing:
					styled = paint(styles().dim, text)
				case i == 0:
					styled = paint(styles().key, text)
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
	}
	rule("┏", "━", "┳", "┓")
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
	footer()
	_, err := io.WriteString(w, b.String())
	return err
}

// writeEmpty draws a table with nothing in it (table([]) when nothing
// matched): its title, then a line that says so.
func writeEmpty(w io.Writer, title string) error {
	text := "(no rows)\n"
	if title != "" {
		text = cellText(title) + "\n" + text
	}
	_, err := io.WriteString(w, text)
	return err
}

// longest is the widest of cells.
func longest(cells []string) string {
	w := ""
	for _, c := range cells {
		if runewidth.StringWidth(c) > runewidth.StringWidth(w) {
			w = c
		}
	}
	return w
}

// cellTexts gives every row n one-line printable cells (see cellText).
func cellTexts(rows [][]string, n int) [][]string {
	out := make([][]string, len(rows))
	for r, row := range rows {
		out[r] = make([]string, n)
		for i := 0; i < n && i < len(row); i++ {
			out[r][i] = cellText(row[i])
		}
	}
	return out
}

// flat keeps a cell on one line: line breaks and tabs are shown as marks.
// It is made on first use, as styles are.
var (
	flatOnce sync.Once
	flat     *strings.Replacer
)

// cellText keeps a cell on one line and shows any other control character
// as an escape (see Printable). Every cell, header and title passes here.
func cellText(s string) string {
	if strings.ContainsAny(s, "\r\n\t") {
		flatOnce.Do(func() { flat = strings.NewReplacer("\r\n", "⏎", "\n", "⏎", "\r", "␍", "\t", "⇥") })
		s = flat.Replace(s)
	}
	return Printable(s)
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
	// PipedWidth: see Table.PipedWidth.
	PipedWidth int
}

// Table turns a record into the two-column Property/Value table that the
// official CLI prints for `info` commands.
func (r *Record) Table() *Table {
	t := &Table{Title: r.Title, Columns: []Column{{Header: "Property"}, {Header: "Value"}}, Vertical: true, PipedWidth: r.PipedWidth}
	for _, f := range r.Fields {
		t.Rows = append(t.Rows, []string{f.Name, f.Value})
	}
	return t
}
