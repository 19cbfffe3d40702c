package config

import "fmt"

// Error is a problem in the config file: one line naming the file, the line
// and what to change.
type Error struct {
	Path string
	Line int // 1-based; 0 when no line applies
	Msg  string
}

// Error masks anything key-like in the message as a last guard: messages
// quote names from the file, and a decoder error may quote its text.
func (e *Error) Error() string {
	msg := MaskCommand(e.Msg)
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, msg)
}
