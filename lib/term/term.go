// Package term owns the process's standard streams and the decisions that
// depend on them: whether each stream is a terminal, its width, and whether
// to use colour. Everything that prints asks an *IO instead of os.Std*.
package term

import (
	"io"
	"os"
	"strconv"

	"github.com/mattn/go-isatty"
	xterm "golang.org/x/term"
)

// IO bundles the standard streams with what is known about them.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer

	InTTY  bool
	OutTTY bool
	ErrTTY bool

	// Width is the terminal width used for layout when OutTTY is set.
	Width int
	// measure reads the terminal's current width; nil when Width is fixed.
	measure func() (int, bool)

	ColorOut bool
	ColorErr bool
}

// DefaultWidth is used when a terminal does not report its size.
const DefaultWidth = 80

// System inspects the real process streams and environment.
//
// TINKER_FORCE_TTY=<width> makes stdout and stderr count as terminals of that
// width (stdin is left alone), so tests can exercise the terminal layout.
// Colour follows NO_COLOR, CLICOLOR=0, TERM=dumb and CLICOLOR_FORCE.
func System() *IO {
	s := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	s.InTTY = isTTY(os.Stdin)
	s.OutTTY = isTTY(os.Stdout)
	s.ErrTTY = isTTY(os.Stderr)
	s.Width = DefaultWidth
	if s.OutTTY {
		fd := int(os.Stdout.Fd())
		s.measure = func() (int, bool) {
			w, _, err := xterm.GetSize(fd)
			return w, err == nil && w > 0
		}
		s.Refresh()
	} else if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		s.Width = c
	}
	if w, ok := forcedWidth(os.Getenv); ok {
		s.OutTTY, s.ErrTTY, s.Width, s.measure = true, true, w, nil
	}
	s.ColorOut = colorWanted(os.Getenv, s.OutTTY)
	s.ColorErr = colorWanted(os.Getenv, s.ErrTTY)
	return s
}

// Refresh re-reads the width of a terminal, which may have been resized
// since it was last read; a width from TINKER_FORCE_TTY or COLUMNS stays.
func (s *IO) Refresh() {
	if s.measure == nil {
		return
	}
	if w, ok := s.measure(); ok {
		s.Width = w
	}
}

// Test returns an IO over in-memory streams that are not terminals.
func Test(in io.Reader, out, errw io.Writer) *IO {
	return &IO{In: in, Out: out, Err: errw, Width: DefaultWidth}
}

func isTTY(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

func forcedWidth(getenv func(string) string) (int, bool) {
	v := getenv("TINKER_FORCE_TTY")
	if v == "" {
		return 0, false
	}
	w, err := strconv.Atoi(v)
	if err != nil || w <= 0 {
		w = DefaultWidth
	}
	return w, true
}

// colorWanted applies the usual conventions, strongest first.
func colorWanted(getenv func(string) string, tty bool) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok && getenv("NO_COLOR") != "" {
		return false
	}
	if f := getenv("CLICOLOR_FORCE"); f != "" && f != "0" {
		return true
	}
	if getenv("CLICOLOR") == "0" || getenv("TERM") == "dumb" {
		return false
	}
	return tty
}
