package render

import (
	"strings"

	"github.com/fatih/color"
	"github.com/mattn/go-runewidth"
)

// blocks is what writeBlocks draws: a key per line of each block, their
// kinds, and the rows (those after a gap in tail).
type blocks struct {
	headers    []string
	kinds      []Kind
	rows, tail [][]string
}

// blockShape is a table's rows as blocks; a record's Property/Value rows
// become one block whose keys are the properties.
func blockShape(t *Table, headers []string, kinds []Kind, rows, tail [][]string) blocks {
	if !t.Vertical || len(headers) != 2 {
		return blocks{headers, kinds, rows, tail}
	}
	var bl blocks
	vals := []string{}
	for _, r := range append(rows, tail...) {
		bl.headers = append(bl.headers, r[0])
		vals = append(vals, r[1])
	}
	bl.kinds = make([]Kind, len(vals)) // free text
	bl.rows = [][]string{vals}
	return bl
}

// writeBlocks draws each row as a block of `header  value` lines, for
// widths where the table's whole columns do not fit side by side; values
// wrap (free text) or fold (identifiers, paths), nothing is cut.
func writeBlocks(b *strings.Builder, title string, bl blocks, width int, paint func(*color.Color, string) string) {
	headers, kinds, rows, tail := bl.headers, bl.kinds, bl.rows, bl.tail
	if title != "" {
		for _, line := range wrap(cellText(title), width) {
			b.WriteString(paint(styles().title, line))
			b.WriteByte('\n')
		}
	}
	keyw := 0
	for _, h := range headers {
		keyw = max(keyw, runewidth.StringWidth(h))
	}
	keyw = max(1, min(keyw, width/3)) // a width under 3 still gets a key column
	valw := max(1, width-keyw-2)
	block := func(r []string) {
		b.WriteByte('\n')
		for i, h := range headers {
			keys := wrap(h, keyw)
			var vals []string
			if kinds[i] == Text || kinds[i] == Time {
				vals = wrap(r[i], valw)
			} else {
				vals = fold(r[i], valw)
			}
			for l := 0; l < max(len(keys), len(vals)); l++ {
				key, val := "", ""
				if l < len(keys) {
					key = keys[l]
				}
				if l < len(vals) {
					val = vals[l]
				}
				b.WriteString(paint(styles().header, key))
				if val == "" {
					b.WriteByte('\n')
					continue
				}
				b.WriteString(strings.Repeat(" ", max(0, keyw-runewidth.StringWidth(key))+2))
				switch {
				case val == Missing:
					val = paint(styles().dim, val)
				case i == 0:
					val = paint(styles().key, val)
				}
				b.WriteString(val)
				b.WriteByte('\n')
			}
		}
	}
	for _, r := range rows {
		block(r)
	}
	if len(tail) > 0 {
		b.WriteString("\n⋮\n")
		for _, r := range tail {
			block(r)
		}
	}
}
