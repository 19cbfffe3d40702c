package shell

import (
	"strings"

	"github.com/mattn/go-runewidth"
)

// wrapText fits text to width cells for a terminal: a longer line breaks
// at spaces, its continuation indented as the line is (two more for a
// "- " list item), so help pages and the banner never break mid-word. A
// word wider than the line stays whole.
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
	if runewidth.StringWidth(hang) >= width/2 {
		hang = ""
	}
	var lines []string
	cur := indent
	for _, word := range strings.Fields(body) {
		switch {
		case strings.TrimSpace(cur) == "":
			cur += word
		case runewidth.StringWidth(cur)+1+runewidth.StringWidth(word) <= width:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = hang + word
		}
	}
	return append(lines, cur)
}
