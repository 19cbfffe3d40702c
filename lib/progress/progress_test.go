package progress

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake time source tests advance by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{t: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)} }

// lastLine returns what a terminal would show: the text after the last \r,
// without the clear-to-end-of-line sequence.
func lastLine(s string) string {
	if i := strings.LastIndex(s, "\r"); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSuffix(s, clearEOL)
}

func TestBytesBarRendering(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	b := newBar(&buf, true, 100, "Downloading", 1<<30, unitBytes, c.now, 0) // 1.0 GB in the tables' binary units
	b.redraw()
	if got := lastLine(buf.String()); !strings.HasPrefix(got, "Downloading  [>") || !strings.Contains(got, "0 B / 1.0 GB    0%") {
		t.Errorf("initial line = %q", got)
	}
	for range 20 {
		c.advance(100 * time.Millisecond)
		b.Add(10 << 20) // 100 MB/s
		b.redraw()
	}
	got := lastLine(buf.String())
	want := "Downloading  [=======>                               ]  200.0 MB / 1.0 GB   20%  100.0 MB/s  ETA 8s"
	if got != want {
		t.Errorf("line =\n%q, want\n%q", got, want)
	}
	if w := len([]rune(got)); w > 99 {
		t.Errorf("line is %d columns, wider than 99", w)
	}
	n := buf.Len()
	b.redraw() // nothing changed: no write
	if buf.Len() != n {
		t.Errorf("unchanged line was redrawn")
	}
	b.Add(1<<30 - 200<<20)
	b.Finish()
	out := buf.String()
	if !strings.HasSuffix(out, "\n") || !strings.Contains(lastLine(strings.TrimSuffix(out, "\n")), "1.0 GB / 1.0 GB  100%") {
		t.Errorf("final output tail = %q", out[max(0, len(out)-120):])
	}
	b.Finish() // idempotent
	b.Add(5)
	if buf.String() != out {
		t.Errorf("bar wrote after Finish")
	}
}

func TestBarNarrowAndUnknownTotal(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	b := newBar(&buf, true, 30, "Downloading archive", 1<<30, unitBytes, c.now, 0)
	b.Add(1 << 29)
	b.redraw()
	got := lastLine(buf.String())
	if w := len([]rune(got)); w > 29 || strings.Contains(got, "[") {
		t.Errorf("narrow line = %q (%d columns), want no bar and ≤ 29 columns", got, w)
	}

	buf.Reset()
	b = newBar(&buf, true, 80, "Fetching", 0, unitCount, c.now, 0)
	b.Add(1234)
	c.advance(time.Second)
	b.redraw()
	got = lastLine(buf.String())
	if !strings.HasSuffix(got, "Fetching  1,234  1234.0/s") || strings.Contains(got, "%") {
		t.Errorf("unknown-total line = %q", got)
	}
}

func TestCountBar(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	b := newBar(&buf, true, 80, "Deleting", 40, unitCount, c.now, 0)
	c.advance(time.Second)
	b.Add(10)
	b.redraw()
	got := lastLine(buf.String())
	if !strings.Contains(got, "10 / 40   25%  10.0/s  ETA 3s") {
		t.Errorf("count line = %q", got)
	}
	b.Clear()
	if !strings.HasSuffix(buf.String(), "\r"+clearEOL) {
		t.Errorf("Clear did not erase the line: %q", buf.String())
	}
}

func TestBarSilentOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	b := NewBytes(&buf, false, 80, "Downloading", 100)
	b.Add(50)
	b.Finish()
	s := NewStatus(&buf, false, 80, "queued")
	s.Set("running")
	s.Done("done")
	if buf.Len() != 0 {
		t.Errorf("off a terminal wrote %q", buf.String())
	}
}

// syncBuffer lets the ticker goroutine and the test share a buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBarConcurrentAdd(t *testing.T) {
	var buf syncBuffer
	b := NewCount(&buf, true, 80, "Deleting", 8000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				b.Add(1)
			}
		})
	}
	wg.Wait()
	b.Finish()
	if b.Done() != 8000 {
		t.Errorf("done = %d, want 8000", b.Done())
	}
	out := buf.String()
	if !strings.Contains(lastLine(strings.TrimSuffix(out, "\n")), "8,000 / 8,000  100%") || !strings.HasSuffix(out, "\n") {
		t.Errorf("final = %q", out)
	}
}

func TestSetResetsRate(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	b := newBar(&buf, true, 120, "Downloading", 1000, unitBytes, c.now, 0)
	c.advance(time.Second)
	b.Add(500)
	b.redraw()
	b.Set(0)
	c.advance(time.Second)
	b.Add(100)
	b.redraw()
	if got := lastLine(buf.String()); !strings.Contains(got, "100 B / 1000 B   10%  100 B/s  ETA 9s") {
		t.Errorf("after restart line = %q", got)
	}
}

func TestStatus(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	s := newStatus(&buf, true, 40, "queued…", c.now, 0)
	s.redraw()
	if got := lastLine(buf.String()); got != "⠋ queued…" {
		t.Errorf("first = %q", got)
	}
	c.advance(3 * time.Second)
	s.Set("running…")
	s.redraw()
	if got := lastLine(buf.String()); got != "⠙ running… 3s" {
		t.Errorf("second = %q", got)
	}
	s.Set(strings.Repeat("very long text ", 10))
	s.redraw()
	if got := lastLine(buf.String()); len([]rune(got)) != 39 || !strings.HasSuffix(got, "…") {
		t.Errorf("long = %q", got)
	}
	s.Done("done")
	if !strings.HasSuffix(buf.String(), "\r"+clearEOL+"done\n") {
		t.Errorf("Done output tail = %q", buf.String())
	}
}

func TestFormatETA(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1500 * time.Millisecond: "2s", 59 * time.Second: "59s",
		187 * time.Second: "3m07s", 2*time.Hour + 5*time.Minute + 30*time.Second: "2h05m",
	} {
		if got := FormatETA(d); got != want {
			t.Errorf("FormatETA(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestClickNonTTY(t *testing.T) {
	var buf bytes.Buffer
	c := NewClick(&buf, false, "Fetching all training runs", 250)
	c.Add(100)
	c.Add(150)
	c.Complete()
	c.Close()
	if got := buf.String(); got != "Fetching all training runs\n" {
		t.Errorf("non-TTY output = %q", got)
	}
}

func TestClickTTY(t *testing.T) {
	var buf bytes.Buffer
	clk := newClock()
	c := newClick(&buf, true, "Fetching all training runs", 250, clk.now)
	first := "\r\x1b[?25lFetching all training runs  [------------------------------------]  0/250    0%"
	if buf.String() != first {
		t.Fatalf("first draw = %q", buf.String())
	}
	buf.Reset()
	c.Add(100)
	want := "\r\x1b[?25lFetching all training runs  [##############----------------------]  100/250   40%"
	if buf.String() != want {
		t.Errorf("update = %q\nwant     %q", buf.String(), want)
	}
	buf.Reset()
	c.Add(0) // unchanged: nothing written
	if buf.Len() != 0 {
		t.Errorf("unchanged redraw wrote %q", buf.String())
	}
	clk.advance(2 * time.Second) // 100 items took 2 s: 0.02 s/item, 130 left
	c.Add(20)
	want = "\r\x1b[?25lFetching all training runs  [#################-------------------]  120/250   48%  00:00:02"
	if buf.String() != want {
		t.Errorf("with ETA = %q\nwant       %q", buf.String(), want)
	}
	buf.Reset()
	c.Add(130)
	// Finished: no ETA, and the shorter line is padded to the longest so far.
	want = "\r\x1b[?25lFetching all training runs  [####################################]  250/250  100%          "
	if buf.String() != want {
		t.Errorf("finished = %q\nwant       %q", buf.String(), want)
	}
	buf.Reset()
	c.Close()
	c.Close()
	if buf.String() != "\x1b[?25h\n" {
		t.Errorf("close = %q", buf.String())
	}
}

func TestClickZeroLength(t *testing.T) {
	var buf bytes.Buffer
	c := newClick(&buf, true, "Downloading archive", 0, newClock().now)
	buf.Reset()
	c.Add(8192)
	if got := buf.String(); !strings.HasSuffix(got, "[####################################]  8192/0  100%") {
		t.Errorf("zero length = %q", got)
	}
}

func TestClickETAFormat(t *testing.T) {
	if got := clickETA(59); got != "00:00:59" {
		t.Errorf("59 s = %q", got)
	}
	if got := clickETA(90061); got != "1d 01:01:01" {
		t.Errorf("90061 s = %q", got)
	}
}

// End keeps the bar after success, erases it after a failure, and does
// nothing on a nil bar (no terminal).
func TestBarEnd(t *testing.T) {
	var nilBar *Bar
	nilBar.End(nil)
	c := newClock()
	var ok, failed bytes.Buffer
	b := newBar(&ok, true, 80, "Uploading", 10, unitCount, c.now, 0)
	b.Add(10)
	b.End(nil)
	if !strings.HasSuffix(ok.String(), "\n") {
		t.Errorf("End(nil) did not finish the line: %q", ok.String())
	}
	b = newBar(&failed, true, 80, "Uploading", 10, unitCount, c.now, 0)
	b.Add(3)
	b.End(errors.New("boom"))
	if !strings.HasSuffix(failed.String(), "\r"+clearEOL) {
		t.Errorf("End(err) did not erase the line: %q", failed.String())
	}
}

// The wait before a transfer shows a status line with its own clock; the
// first count clears it and starts the bar, once.
func TestStaged(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	st := newStatus(&buf, true, 80, "Preparing archive…", func() time.Time { return now }, 0)
	starts := 0
	var bar *Bar
	s := NewStaged(st, func() Counter {
		starts++
		bar = newBar(&buf, true, 80, "Downloading", 0, unitBytes, func() time.Time { return now }, 0)
		return bar
	})
	if !strings.Contains(buf.String(), "Preparing archive…") {
		t.Fatalf("no status line before the transfer: %q", buf.String())
	}
	now = now.Add(20 * time.Second)
	st.redraw()
	if !strings.Contains(buf.String(), "Preparing archive… 20s") {
		t.Errorf("status line without its clock: %q", buf.String())
	}
	if starts != 0 {
		t.Fatal("bar started before any count")
	}
	s.SetTotal(100)
	s.Add(10)
	s.Add(5)
	if starts != 1 || bar.done.Load() != 15 || bar.total.Load() != 100 {
		t.Errorf("starts %d, bar at %d of %d", starts, bar.done.Load(), bar.total.Load())
	}
}
