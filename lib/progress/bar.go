// Package progress draws progress bars and live status lines on a terminal.
//
// Every indicator takes the writer, whether that writer is a terminal, and
// its width from the caller (the shell owns TTY detection). Off a terminal
// they write nothing at all, except ClickBar, which reproduces the official
// CLI's habit of printing its label once. All methods are safe for
// concurrent use; Add is a single atomic operation, and redraws happen on a
// ticker at most ten times a second, only when the line changed.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/tinkershell/tinker/lib/render"
)

// RedrawInterval is how often a terminal indicator redraws.
const RedrawInterval = 100 * time.Millisecond

const clearEOL = "\x1b[K"

type unit int

const (
	unitBytes unit = iota
	unitCount
)

// Bar is a progress bar for a byte stream (NewBytes) or a number of items
// (NewCount). The zero total means "unknown": the bar then shows the amount
// done and the rate, without percentage or ETA.
type Bar struct {
	w     io.Writer
	tty   bool
	width int
	label string
	unit  unit
	now   func() time.Time

	done  atomic.Int64
	total atomic.Int64

	mu      sync.Mutex
	start   time.Time
	samples []sample // recent (time, done) pairs for the rate
	last    string   // last line written, to skip identical redraws
	frame   int
	closed  bool
	stop    chan struct{}
	stopped chan struct{}
}

type sample struct {
	t    time.Time
	done int64
}

// rateWindow is how far back the rate looks: long enough to be steady,
// short enough to follow a stall.
const rateWindow = 3 * time.Second

// NewBytes starts a byte progress bar with the given label and total
// (0 if unknown). width is the terminal width in columns.
func NewBytes(w io.Writer, isTerminal bool, width int, label string, total int64) *Bar {
	return newBar(w, isTerminal, width, label, total, unitBytes, time.Now, RedrawInterval)
}

// NewCount starts a progress bar over total items (0 if unknown), for
// paginated fetches, deletions and the like.
func NewCount(w io.Writer, isTerminal bool, width int, label string, total int) *Bar {
	return newBar(w, isTerminal, width, label, int64(total), unitCount, time.Now, RedrawInterval)
}

// newBar is the constructor tests use with a fake clock and no ticker
// (interval 0); they call redraw themselves.
func newBar(w io.Writer, tty bool, width int, label string, total int64, u unit, now func() time.Time, interval time.Duration) *Bar {
	if width <= 0 {
		width = 80
	}
	b := &Bar{w: w, tty: tty, width: width, label: label, unit: u, now: now}
	b.total.Store(total)
	b.start = now()
	b.samples = []sample{{b.start, 0}}
	if tty && interval > 0 {
		b.stop = make(chan struct{})
		b.stopped = make(chan struct{})
		go b.loop(interval)
	}
	return b
}

func (b *Bar) loop(interval time.Duration) {
	defer close(b.stopped)
	t := time.NewTicker(interval)
	defer t.Stop()
	b.redraw()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.redraw()
		}
	}
}

// Add records n more bytes or items done.
func (b *Bar) Add(n int64) { b.done.Add(n) }

// Set sets the amount done, e.g. back to 0 when a download restarts.
func (b *Bar) Set(n int64) {
	b.done.Store(n)
	b.mu.Lock()
	// A jump backwards would give a negative rate; restart the window.
	b.samples = append(b.samples[:0], sample{b.now(), n})
	b.mu.Unlock()
}

// SetTotal sets the total (0 if unknown), e.g. once Content-Length is known.
func (b *Bar) SetTotal(n int64) { b.total.Store(n) }

// Done returns the amount done so far.
func (b *Bar) Done() int64 { return b.done.Load() }

// Finish draws the final state and ends the line, leaving the bar visible.
func (b *Bar) Finish() { b.end(true) }

// Clear removes the bar from the terminal, e.g. before printing an error.
func (b *Bar) Clear() { b.end(false) }

// End finishes the bar after a successful operation and clears it after a
// failed one (err != nil). A nil bar (no terminal) does nothing.
func (b *Bar) End(err error) {
	if b == nil {
		return
	}
	b.end(err == nil)
}

func (b *Bar) end(keep bool) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	if b.stop != nil {
		close(b.stop)
		<-b.stopped
	}
	if !b.tty {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if keep {
		io.WriteString(b.w, "\r"+b.line(b.now(), true)+clearEOL+"\n")
	} else {
		io.WriteString(b.w, "\r"+clearEOL)
	}
}

func (b *Bar) redraw() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || !b.tty {
		return
	}
	now := b.now()
	b.sample(now)
	b.frame++
	line := b.line(now, false)
	if line == b.last {
		return
	}
	b.last = line
	io.WriteString(b.w, "\r"+line+clearEOL)
}

func (b *Bar) sample(now time.Time) {
	b.samples = append(b.samples, sample{now, b.done.Load()})
	// Keep one sample at or beyond the window edge so the rate covers it all.
	i := 0
	for i+1 < len(b.samples) && now.Sub(b.samples[i+1].t) >= rateWindow {
		i++
	}
	b.samples = b.samples[i:]
}

// rate is units per second over the recent window.
func (b *Bar) rate() float64 {
	first, last := b.samples[0], b.samples[len(b.samples)-1]
	dt := last.t.Sub(first.t).Seconds()
	if dt < 0.2 {
		// Too early for a window: use the whole run if it is long enough.
		dt = last.t.Sub(b.start).Seconds()
		if dt < 0.2 {
			return 0
		}
		return float64(last.done) / dt
	}
	return float64(last.done-first.done) / dt
}

// line renders the bar for the current state, fitted to the width.
func (b *Bar) line(now time.Time, final bool) string {
	done, total := b.done.Load(), b.total.Load()
	rate := b.rate()
	if final {
		if el := now.Sub(b.start).Seconds(); el > 0 {
			rate = float64(done) / el
		}
	}

	var info []string
	if total > 0 {
		info = append(info, b.amount(done)+" / "+b.amount(total))
		pct := 100 * float64(done) / float64(total)
		info = append(info, fmt.Sprintf("%3.0f%%", min(pct, 100)))
	} else {
		info = append(info, b.amount(done))
	}
	if rate > 0 {
		if b.unit == unitBytes {
			info = append(info, render.Size(int64(rate))+"/s") // same units as the tables
		} else {
			info = append(info, fmt.Sprintf("%.1f/s", rate))
		}
	}
	if !final && total > 0 && done < total && rate > 0 {
		info = append(info, "ETA "+FormatETA(time.Duration(float64(total-done)/rate*float64(time.Second))))
	}
	infoText := strings.Join(info, "  ")

	// One column short of the width: writing the last column makes some
	// terminals wrap.
	avail := b.width - 1
	label := b.label
	if total <= 0 && !final {
		label = spinnerFrames[b.frame%len(spinnerFrames)] + " " + label
	}
	fixed := runewidth.StringWidth(label) + 2 + runewidth.StringWidth(infoText)
	barW := min(avail-fixed-4, 40) // 4 = "[" + "]" + two spaces
	if total <= 0 || barW < 10 {
		return fit(label+"  "+infoText, avail)
	}
	filled := int(float64(barW) * min(float64(done)/float64(total), 1))
	bar := strings.Repeat("=", filled)
	if filled < barW {
		bar += ">" + strings.Repeat(" ", barW-filled-1)
	}
	return fit(label+"  ["+bar+"]  "+infoText, avail)
}

func (b *Bar) amount(n int64) string {
	if b.unit == unitBytes {
		return render.Size(max(n, 0))
	}
	return render.Thousands(n)
}

// fit truncates s to width columns.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if runewidth.StringWidth(s) <= width {
		return s
	}
	return runewidth.Truncate(s, width, "…")
}

// FormatETA renders a remaining time compactly: "45s", "3m07s", "2h05m".
func FormatETA(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", max(s, 0))
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
}
