package render

import (
	"strings"

	"github.com/fatih/color"
	"github.com/mattn/go-runewidth"
)

// writeBlocks draws each row as a block of `header  value` lines, for
// widths where the table's whole columns do not fit side by side; values
// wrap (free text) or fold (identifiers, paths), nothing is cut.
func writeBlocks(b *strings.Builder, title string, headers []string, kinds []Kind, rows, tail [][]string, width int, paint func(*color.Color, string) string) {
	if title != "" {
		for _, line := range wrap(cellText(title), width) {
			b.WriteString(paint(styleTitle, line))
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
				b.WriteString(paint(styleHeader, key))
				if val == "" {
					b.WriteByte('\n')
					continue
				}
				b.WriteString(strings.Repeat(" ", max(0, keyw-runewidth.StringWidth(key))+2))
				switch {
				case val == Missing:
					val = paint(styleDim, val)
				case i == 0:
					val = paint(styleKey, val)
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
