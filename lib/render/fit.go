package render

import (
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// Kind says what a column holds, which decides how it gives way when a
// table is narrower than its content. Nothing is ever cut so that two
// different values look the same.
type Kind int

const (
	// Text is free text: it wraps at spaces (long words fold) and is the
	// first to give way.
	Text Kind = iota
	// ID is an identifier (run id, checkpoint id, model name): kept whole.
	ID
	// Path is a path or URI: shortened in the middle, keeping its
	// distinguishing tail, or folded when shortening would make two rows
	// look alike.
	Path
	// Time is a date or relative time: kept whole in a table, wrapped at
	// spaces in a block.
	Time
	// Number is kept whole.
	Number
)

// minTextWidth and minPathWidth are the narrowest free text and path
// columns worth drawing; below them a table turns into blocks. Free text
// also keeps its share of the width, so it does not end up one word a line
// beside a long path.
const (
	minTextWidth = 10
	minPathWidth = 24
)

// kind is the column's kind; a right-aligned column counts as a number.
func (c Column) kind() Kind {
	if c.Kind == Text && c.Right {
		return Number
	}
	return c.Kind
}

// minWidth is the narrowest width a column can take without losing
// anything that tells its cells apart; natural is its widest cell or
// header. Headers wrap at spaces, so their longest word counts, not all.
func minWidth(k Kind, natural, textMin int, header string, cells []string) int {
	switch k {
	case Text:
		return min(natural, max(textMin, longestUnbreakable(cells)))
	case Path:
		return min(natural, minPathWidth)
	}
	w := longestWord(header)
	for _, c := range cells {
		w = max(w, runewidth.StringWidth(c))
	}
	return min(natural, w)
}

func longestWord(s string) int {
	w := 1
	for _, word := range strings.Fields(s) {
		w = max(w, runewidth.StringWidth(word))
	}
	return w
}

// shrinkOrder is the order in which kinds give way: free text wraps
// first, paths are shortened next; the other kinds stay whole.
var shrinkOrder = []Kind{Text, Path}

// fit narrows columns, widest first within each kind in shrinkOrder, until
// the widths sum to at most avail. It reports false when even the minimum
// widths do not fit, and the table should be drawn as blocks.
func fit(widths, mins []int, kinds []Kind, avail int) bool {
	sum := 0
	for _, w := range widths {
		sum += w
	}
	for _, k := range shrinkOrder {
		for sum > avail {
			widest := -1
			for i, w := range widths {
				if kinds[i] == k && w > mins[i] && (widest < 0 || w > widths[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				break
			}
			widths[widest]--
			sum--
		}
	}
	return sum <= avail
}

// layoutCell breaks one cell into the lines drawn in a column of width w.
func layoutCell(s string, k Kind, w int, elide bool) []string {
	if runewidth.StringWidth(s) <= w {
		return []string{s}
	}
	switch k {
	case Path:
		if elide {
			return []string{elideMiddle(s, w)}
		}
		return fold(s, w)
	case ID, Number:
		return fold(s, w)
	}
	return wrap(s, w)
}

// elideMiddle shortens s to w cells by replacing its middle with "…". It
// keeps the longest tail that starts after a separator (where paths
// differ: the run's ":train:1", the checkpoint's name) and fills the rest
// with the head.
func elideMiddle(s string, w int) string {
	if runewidth.StringWidth(s) <= w || w < 2 {
		return s
	}
	tail := ""
	for i := len(s) - 1; i > 0; i-- {
		if !strings.ContainsRune(pathSeparators, rune(s[i-1])) {
			continue
		}
		if runewidth.StringWidth(s[i:]) > w-1 {
			break
		}
		tail = s[i:]
	}
	if tail == "" { // no separator near the end: keep the last characters
		tail = runewidth.TruncateLeft(s, runewidth.StringWidth(s)-(w-1)/2, "")
	}
	head := runewidth.Truncate(s, w-1-runewidth.StringWidth(tail), "")
	return head + "…" + tail
}

// pathSeparators are where a path or identifier is preferably broken.
const pathSeparators = "/:-_.@"

// elisionKeepsRowsApart reports whether shortening every cell to w keeps
// distinct values distinct.
func elisionKeepsRowsApart(cells []string, w int) bool {
	seen := make(map[string]string, len(cells))
	for _, c := range cells {
		e := elideMiddle(c, w)
		if prev, ok := seen[e]; ok && prev != c {
			return false
		}
		seen[e] = c
	}
	return true
}

// A tinker:// path is never broken across lines, in a cell, a block or a
// title: a person copies it whole. Where it is longer than the line it
// stands alone on its line, and a table whose columns cannot hold it
// whole is drawn as blocks, where the terminal wraps the long line and a
// copy still gives the path.

// unbreakable reports a word that must stay on one line: a tinker:// path
// or a training run id (UUID:train:N).
func unbreakable(word string) bool {
	return strings.HasPrefix(word, "tinker://") || strings.Contains(word, ":train:")
}

// longestUnbreakable is the width of the widest unbreakable word in cells.
func longestUnbreakable(cells []string) int {
	w := 0
	for _, c := range cells {
		if !strings.Contains(c, "tinker://") && !strings.Contains(c, ":train:") {
			continue
		}
		for _, word := range strings.Fields(c) {
			if unbreakable(word) {
				w = max(w, runewidth.StringWidth(word))
			}
		}
	}
	return w
}

// fold breaks s into lines of at most w cells, preferring to break after a
// separator in the second half of a line; an unbreakable s stays whole.
func fold(s string, w int) []string {
	if w <= 0 || unbreakable(s) {
		return []string{s}
	}
	var lines []string
	for runewidth.StringWidth(s) > w {
		cut := runewidth.Truncate(s, w, "")
		if i := strings.LastIndexAny(cut, pathSeparators); i >= 0 && runewidth.StringWidth(cut[:i+1]) > w/2 {
			cut = cut[:i+1]
		}
		if cut == "" { // a character wider than the column
			_, size := utf8.DecodeRuneInString(s)
			cut = s[:size]
		}
		lines = append(lines, cut)
		s = s[len(cut):]
	}
	return append(lines, s)
}

// wrap splits text into lines of at most width cells at spaces; a word
// longer than a line is folded, not cut.
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
		if runewidth.StringWidth(line) > width && unbreakable(word) {
			lines, line = append(lines, word), "" // alone on its line, whole
			continue
		}
		if runewidth.StringWidth(line) > width {
			parts := fold(line, width)
			lines = append(lines, parts[:len(parts)-1]...)
			line = parts[len(parts)-1]
		}
	}
	if line != "" || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}
