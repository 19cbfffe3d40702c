package shell

import "strings"

// lineMark stands for a line break inside a history entry. The line editor
// shows and edits one line of text, and its history file holds one entry a
// line, so a statement typed over several lines is kept as one entry with
// its lines joined by lineMark: Up brings back the whole statement, and
// Enter runs it as the lines it was typed as.
const lineMark = "⏎"

// joinStatement makes one history entry of a statement's lines. ok is false
// when the entry could not be told apart from a one-line statement on the
// way back (a line break inside a string literal, or a line that contains
// lineMark itself); such a statement is kept as one entry per line.
func joinStatement(lines []string) (entry string, ok bool) {
	for _, l := range lines {
		if strings.Contains(l, lineMark) {
			return "", false
		}
	}
	entry = strings.Join(lines, lineMark)
	if parses(entry) {
		return "", false
	}
	return entry, true
}

// splitRecalled undoes joinStatement: a line holding lineMark that is not
// valid Starlark as it stands is a statement's lines. A line that parses
// keeps its lineMarks (they are inside string literals or comments).
func splitRecalled(line string) []string {
	if !strings.Contains(line, lineMark) || parses(line) {
		return []string{line}
	}
	return strings.Split(line, lineMark)
}

func parses(src string) bool {
	_, err := fileOptions.Parse("<history>", src, 0)
	return err == nil
}
