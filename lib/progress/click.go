package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Escape sequences the official CLI's bar (Python click) wraps its lines in.
const (
	clickBeforeBar = "\r\x1b[?25l" // carriage return, hide cursor
	clickAfterBar  = "\x1b[?25h\n" // show cursor, newline
	clickBarWidth  = 36
)

// ClickBar reproduces the official CLI's progress bar byte for byte (Python
// click's ProgressBar with show_pos and show_percent, used as
// `with click.progressbar(length=n, label=l) as bar: bar.update(k)`), for
// the compatibility subcommands (docs/compat.md, "Kept quirks"):
//
//   - off a terminal it prints its label and a newline once, when created;
//   - on a terminal every update redraws "\r\x1b[?25l" + line, where line is
//     "<label>  [<36 chars of # and ->]  <pos>/<len>  NN%" plus, after one
//     second and while unfinished, "  HH:MM:SS"; a shorter line is padded
//     with spaces to the longest one drawn; an unchanged line is not redrawn;
//   - Close writes "\x1b[?25h\n".
//
// Unlike Bar it redraws synchronously on every update, as click does.
type ClickBar struct {
	w     io.Writer
	tty   bool
	label string
	now   func() time.Time

	mu        sync.Mutex
	length    int64
	pos       int64
	start     time.Time
	lastETA   time.Time
	avg       []float64 // seconds per unit, last 7 measurements
	etaKnown  bool
	finished  bool
	lastLine  string
	maxWidth  int // 0 until the first draw
	closed    bool
	labelDone bool
}

// NewClick creates the bar and draws it once (click's __enter__).
// length is the expected total; 0 is tolerated, as in click.
func NewClick(w io.Writer, isTerminal bool, label string, length int64) *ClickBar {
	return newClick(w, isTerminal, label, length, time.Now)
}

func newClick(w io.Writer, tty bool, label string, length int64, now func() time.Time) *ClickBar {
	c := &ClickBar{w: w, tty: tty, label: label, length: length, now: now}
	c.start = now()
	c.lastETA = c.start
	c.mu.Lock()
	c.render()
	c.mu.Unlock()
	return c
}

// Add advances the bar by n (click's update(n)).
func (c *ClickBar) Add(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step(n)
	c.render()
}

// Set moves the bar to an absolute position (a restarted download).
func (c *ClickBar) Set(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step(n - c.pos)
	c.render()
}

// SetTotal changes the length (known only once a response arrives).
func (c *ClickBar) SetTotal(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.length = n
}

// Complete marks the bar finished and redraws it at 100% without an ETA,
// as click does at the end of an iterated bar.
func (c *ClickBar) Complete() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.etaKnown = false
	c.finished = true
	c.render()
}

// Close ends the bar (click's __exit__): on a terminal it shows the cursor
// again and ends the line; off a terminal it writes nothing.
func (c *ClickBar) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.tty {
		io.WriteString(c.w, clickAfterBar)
	}
}

func (c *ClickBar) step(n int64) {
	c.pos += n
	if c.pos >= c.length {
		c.finished = true
	}
	now := c.now()
	if now.Sub(c.lastETA) < time.Second {
		return
	}
	c.lastETA = now
	el := now.Sub(c.start).Seconds()
	step := el
	if c.pos != 0 {
		step = el / float64(c.pos)
	}
	if len(c.avg) > 6 {
		c.avg = c.avg[len(c.avg)-6:]
	}
	c.avg = append(c.avg, step)
	c.etaKnown = true
}

func (c *ClickBar) render() {
	if c.closed {
		return
	}
	if !c.tty {
		if !c.labelDone {
			c.labelDone = true
			io.WriteString(c.w, c.label+"\n")
		}
		return
	}
	clear := clickBarWidth
	if c.maxWidth > 0 {
		clear = c.maxWidth
	}
	line := c.formatLine()
	n := len([]rune(line))
	if c.maxWidth < n {
		c.maxWidth = n
	}
	out := clickBeforeBar + line + strings.Repeat(" ", max(clear-n, 0))
	if out == c.lastLine {
		return
	}
	c.lastLine = out
	io.WriteString(c.w, out)
}

func (c *ClickBar) pct() float64 {
	if c.finished {
		return 1
	}
	l := float64(c.length)
	if l == 0 {
		l = 1
	}
	return min(float64(c.pos)/l, 1)
}

func (c *ClickBar) formatLine() string {
	filled := int(c.pct() * clickBarWidth)
	bar := strings.Repeat("#", filled) + strings.Repeat("-", clickBarWidth-filled)
	info := []string{
		fmt.Sprintf("%d/%d", c.pos, c.length),
		fmt.Sprintf("%3d%%", int(c.pct()*100)),
	}
	if c.etaKnown && !c.finished {
		info = append(info, clickETA(c.eta()))
	}
	return strings.TrimRight(c.label+"  ["+bar+"]  "+strings.Join(info, "  "), " \t\n")
}

func (c *ClickBar) eta() float64 {
	if c.finished || len(c.avg) == 0 {
		return 0
	}
	var sum float64
	for _, v := range c.avg {
		sum += v
	}
	return sum / float64(len(c.avg)) * float64(c.length-c.pos)
}

// clickETA formats seconds as click does: "HH:MM:SS" or "Nd HH:MM:SS".
func clickETA(sec float64) string {
	t := int64(sec)
	s, t := t%60, t/60
	m, t := t%60, t/60
	h, d := t%24, t/24
	if d > 0 {
		return fmt.Sprintf("%dd %02d:%02d:%02d", d, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}
