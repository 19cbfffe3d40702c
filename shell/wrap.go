package shell

import (
	"strings"

	"github.com/mattn/go-runewidth"
)

// wrapText fits text to width cells for a terminal: a longer line breaks
// at spaces, its continuation indented as the line is (two more for a
// "- " list item; to the second column of a two-column line such as help's
// "  name   what it does"; under the first parameter of a signature), so help pages and the banner never break
// mid-word. A word wider than the line stays whole.
func wrapText(text string, width int) string {
	if width <= 0 {
		return text
	}
	lines := strings.Split(text, "\n")
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, wrapLine(l, width)...)
	}
	return strings.Join(out, "\n")
}

func wrapLine(line string, width int) []string {
	if runewidth.StringWidth(line) <= width {
		return []string{line}
	}
	body := strings.TrimLeft(line, " ")
	indent := line[:len(line)-len(body)]
	hang := indent
	if strings.HasPrefix(body, "- ") {
		hang += "  "
	}
	cur := indent
	if term, desc, ok := twoColumns(body); ok && runewidth.StringWidth(indent+term) < width/2 {
		cur = indent + term
		hang = strings.Repeat(" ", runewidth.StringWidth(cur))
		body = desc
	} else if i := strings.IndexByte(body, '('); i > 0 && !strings.ContainsRune(body[:i], ' ') && strings.HasSuffix(body, ")") {
		hang = strings.Repeat(" ", runewidth.StringWidth(indent+body[:i+1])) // a signature: under its first parameter
	}
	if runewidth.StringWidth(hang) >= width/2 {
		hang = ""
	}
	var lines []string
	start := true // the next word follows the prefix directly
	for _, word := range strings.Fields(body) {
		switch {
		case start:
			cur += word
		case runewidth.StringWidth(cur)+1+runewidth.StringWidth(word) <= width:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = hang + word
		}
		start = false
	}
	return append(lines, cur)
}

// twoColumns splits "name   description" at the first run of two or more
// spaces after the first word; term keeps that run, so the description
// keeps its column.
func twoColumns(body string) (term, desc string, ok bool) {
	i := strings.Index(body, "  ")
	if i <= 0 || strings.ContainsRune(body[:i], ' ') {
		return "", "", false
	}
	j := i
	for j < len(body) && body[j] == ' ' {
		j++
	}
	if j == len(body) {
		return "", "", false
	}
	return body[:j], body[j:], true
}
