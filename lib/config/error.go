package config

import "fmt"

// Error is a problem in the config file: one line naming the file, the line
// and what to change.
type Error struct {
	Path string
	Line int // 1-based; 0 when no line applies
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}
