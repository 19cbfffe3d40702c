package ops

import (
	"io"

	"github.com/tinkershell/tinker/lib/progress"
)

// Console is where an operation draws its progress: bars and status lines
// go to W only when it is a terminal (TTY), fitted to Width.
type Console struct {
	W     io.Writer
	TTY   bool
	Width int
}

// CountBar returns a progress factory for listings and deletions: a
// counting bar labelled label on a terminal, nothing elsewhere.
func (c Console) CountBar(label string) func(target int) Progress {
	return func(target int) Progress {
		if !c.TTY {
			return noProgress{}
		}
		return progress.NewCount(c.W, true, c.Width, label, target)
	}
}
