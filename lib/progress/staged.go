package progress

import "sync"

// Counter is what a transfer reports its progress to (a Bar, a ClickBar).
type Counter interface {
	SetTotal(int64)
	Set(int64)
	Add(int64)
}

// Staged shows a status line for the wait before a transfer, such as the
// service preparing an archive, and hands over to a bar at the first count,
// so a long wait is not a bar frozen at "0 B".
type Staged struct {
	status *Status
	start  func() Counter
	once   sync.Once
	bar    Counter
}

// NewStaged shows status now and calls start for the bar when the transfer
// reports its first count.
func NewStaged(status *Status, start func() Counter) *Staged {
	status.redraw() // at once: the wait may end before the first tick
	return &Staged{status: status, start: start}
}

func (s *Staged) begin() Counter {
	s.once.Do(func() {
		s.status.Clear()
		s.bar = s.start()
	})
	return s.bar
}

func (s *Staged) SetTotal(n int64) { s.begin().SetTotal(n) }
func (s *Staged) Set(n int64)      { s.begin().Set(n) }
func (s *Staged) Add(n int64)      { s.begin().Add(n) }

// Bar is the bar the transfer reported to, nil while it never started;
// the status line is cleared either way.
func (s *Staged) Bar() Counter {
	s.status.Clear()
	return s.bar
}
