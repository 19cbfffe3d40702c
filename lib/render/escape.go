package render

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text from the service (checkpoint names, metadata, error messages) may
// hold control characters that a terminal would obey: ESC starts colour
// and cursor sequences, BEL rings, CR overwrites a line, and bidi
// overrides reorder what is shown. Everything printed for a person passes
// through Printable or PrintableLines, which show such characters as
// escapes (ESC as \x1b) instead.

// Printable returns s with every control character escaped visibly,
// newlines and tabs included (\n, \t), so s stays on one line.
func Printable(s string) string { return escape(s, false) }

// PrintableLines is Printable for multi-line text such as error reports:
// it keeps newlines and tabs and escapes every other control character.
func PrintableLines(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] < 0x7f {
		i++
	}
	if i == len(s) {
		return s // plain ASCII, the usual case
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			// A stray byte: 0x9b alone is CSI to an 8-bit terminal.
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case isBidiControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isBidiControl reports the invisible characters that change the display
// order of the text around them.
func isBidiControl(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
