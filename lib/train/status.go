package train

import (
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/progress"
)

// Record is one finished step's metrics, one line of metrics.jsonl. Each
// loop has its own record type; the status line, the chart and the log
// directory need only this much of it.
type Record interface {
	StepNumber() int // 1-based
	// Headline is the figure the status line and the chart follow:
	// ("loss", 0.83) for SFT, a reward for RL.
	Headline() (name string, value float64)
	// Throughput is the tokens the step trained on and its wall time.
	Throughput() (tokens int, seconds float64)
}

// stepLine is the live progress line of a run: step, headline figure,
// tokens/s and ETA, elapsed being the time since the call began and from
// the steps finished before it (a resumed run's), which took none of it.
func stepLine(m Record, total, from int, elapsed time.Duration) string {
	name, v := m.Headline()
	tokens, secs := m.Throughput()
	rate := float64(tokens) / math.Max(secs, 1e-9)
	done := max(m.StepNumber()-from, 1)
	eta := time.Duration(float64(elapsed) / float64(done) * float64(total-m.StepNumber()))
	return fmt.Sprintf("step %d/%d  %s %.4f  %.0f tok/s  ETA %s", m.StepNumber(), total, name, v, rate, progress.FormatETA(eta))
}

// Status draws stepLine on a terminal as steps finish; the builtins and
// the subcommands make one with NewStatus, pass its Step as OnStep and
// Clear it when the call returns.
type Status struct {
	mu    sync.Mutex // Clear may come from another goroutine (Ctrl-C)
	w     io.Writer
	width int
	began time.Time
	from  int              // steps finished before this call (Resumed)
	line  *progress.Status // drawn at the first finished step
}

// NewStatus is a status line on the terminal w, width columns wide.
func NewStatus(w io.Writer, width int) *Status {
	return &Status{w: w, width: width, began: time.Now()}
}

// Resumed says the run resumes after step: the ETA is then measured on
// the steps this call runs, from now. A nil Status ignores it.
func (s *Status) Resumed(step int) {
	if s != nil {
		s.mu.Lock()
		s.from, s.began = step, time.Now()
		s.mu.Unlock()
	}
}

// Step shows m, a step of total.
func (s *Status) Step(m Record, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := stepLine(m, total, s.from, time.Since(s.began))
	if s.line == nil {
		s.line = progress.NewStatus(s.w, true, s.width, line)
	} else {
		s.line.Set(line)
	}
}

// Clear removes the line; a message about the run (interrupted, failed)
// is printed after it. Clearing twice, or a nil Status, does nothing.
func (s *Status) Clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.line != nil {
		s.line.Clear()
	}
}
