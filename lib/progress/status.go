package progress

import (
	"io"
	"sync"
	"time"
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// Status is a live one-line status with a spinner and the elapsed time, for
// work whose size is unknown, such as waiting on a future:
// "⠹ queued… 3s", then "⠼ running… 5s".
type Status struct {
	w     io.Writer
	tty   bool
	width int
	now   func() time.Time

	mu      sync.Mutex
	text    string
	start   time.Time
	frame   int
	last    string
	closed  bool
	stop    chan struct{}
	stopped chan struct{}
}

// NewStatus starts a status line showing text.
func NewStatus(w io.Writer, isTerminal bool, width int, text string) *Status {
	return newStatus(w, isTerminal, width, text, time.Now, RedrawInterval)
}

func newStatus(w io.Writer, tty bool, width int, text string, now func() time.Time, interval time.Duration) *Status {
	if width <= 0 {
		width = 80
	}
	s := &Status{w: w, tty: tty, width: width, now: now, text: text, start: now()}
	if tty && interval > 0 {
		s.stop = make(chan struct{})
		s.stopped = make(chan struct{})
		go s.loop(interval)
	}
	return s
}

func (s *Status) loop(interval time.Duration) {
	defer close(s.stopped)
	t := time.NewTicker(interval)
	defer t.Stop()
	s.redraw()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.redraw()
		}
	}
}

// Set changes the text; it shows at the next redraw.
func (s *Status) Set(text string) {
	s.mu.Lock()
	s.text = text
	s.mu.Unlock()
}

// Done replaces the status with a final line (kept, followed by a newline);
// an empty final text just clears the line.
func (s *Status) Done(final string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	if s.stop != nil {
		close(s.stop)
		<-s.stopped
	}
	if !s.tty {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := "\r" + clearEOL
	if final != "" {
		out += fit(final, s.width-1) + "\n"
	}
	io.WriteString(s.w, out)
}

// Clear removes the status line.
func (s *Status) Clear() { s.Done("") }

func (s *Status) redraw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.tty {
		return
	}
	line := s.line()
	s.frame++
	if line == s.last {
		return
	}
	s.last = line
	io.WriteString(s.w, "\r"+line+clearEOL)
}

func (s *Status) line() string {
	el := s.now().Sub(s.start).Truncate(time.Second)
	l := spinnerFrames[s.frame%len(spinnerFrames)] + " " + s.text
	if el >= time.Second {
		l += " " + FormatETA(el)
	}
	return fit(l, s.width-1)
}
