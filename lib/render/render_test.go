package render

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KB", 1280: "1.2 KB", 1048575: "1024.0 KB", 1 << 30: "1.0 GB", -1: "N/A"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		60 * time.Second:     "just now",
		61 * time.Second:     "1 minute ago",
		3600 * time.Second:   "60 minutes ago",
		3601 * time.Second:   "1 hour ago",
		7 * 24 * time.Hour:   "7 days ago",
		8 * 24 * time.Hour:   "1 week ago",
		31 * 24 * time.Hour:  "2026-10-22",
		-2 * 24 * time.Hour:  "in 2 days",
		-30 * time.Second:    "in less than a minute",
		-61 * time.Minute:    "in 1 hour",
		-45 * 24 * time.Hour: "2027-01-06",
	} {
		if got := Ago(now.Add(-d), now); got != want {
			t.Errorf("Ago(now-%v) = %q, want %q", d, got, want)
		}
	}
}

func TestPyTimeAndFloat(t *testing.T) {
	ts := time.Date(2026, 11, 22, 7, 35, 45, 684189000, time.UTC)
	if got := PyTime(ts); got != "2026-11-22 07:35:45.684189+00:00" {
		t.Errorf("PyTime = %q", got)
	}
	if got := PyTime(ts.Truncate(time.Second)); got != "2026-11-22 07:35:45+00:00" {
		t.Errorf("PyTime = %q", got)
	}
	for f, want := range map[float64]string{2: "2.0", 1.5: "1.5", 1e-5: "1e-05", 1e16: "1e+16", 0.0001: "0.0001"} {
		if got := PyFloat(f); got != want {
			t.Errorf("PyFloat(%v) = %q, want %q", f, got, want)
		}
	}
	if PyFloat(math.Inf(1)) != "inf" {
		t.Error("inf")
	}
}

func TestWriteJSONMatchesPython(t *testing.T) {
	var b bytes.Buffer
	v := Object{{"a", []any{1, 2.0, nil, true}}, {"é<&>", Object{}}, {"l", []any{}}, {"emoji", "🙂"}}
	if err := WriteJSON(&b, v, JSONOptions{Indent: true}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": [\n    1,\n    2.0,\n    null,\n    true\n  ],\n  \"\\u00e9<&>\": {},\n  \"l\": [],\n  \"emoji\": \"\\ud83d\\ude42\"\n}\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	_ = WriteJSON(&b, Object{{"deleted_count", 1}, {"failed", []any{}}}, JSONOptions{Compact: true})
	if b.String() != "{\"deleted_count\": 1, \"failed\": []}\n" {
		t.Errorf("compact: %q", b.String())
	}
}

func TestTableFitsWidth(t *testing.T) {
	tab := &Table{Title: "t", Columns: []Column{{Header: "id"}, {Header: "path"}}, Rows: [][]string{{"a", strings.Repeat("x", 100)}}}
	var b bytes.Buffer
	if err := Write(&b, tab, Options{Width: 40}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		if w := len([]rune(line)); w > 40 {
			t.Errorf("line wider than 40: %d %q", w, line)
		}
	}
	if strings.Contains(b.String(), "…") || !strings.Contains(b.String(), "│ a  │") ||
		strings.Count(strings.ReplaceAll(b.String(), " ", ""), "x") != 100 {
		t.Errorf("short column not whole or free text not wrapped whole:\n%s", b.String())
	}
	b.Reset()
	_ = Write(&b, tab, Options{})
	if !strings.Contains(b.String(), strings.Repeat("x", 100)) {
		t.Error("unlimited width cut a cell")
	}
}

func TestCellsStayOnOneLine(t *testing.T) {
	var b bytes.Buffer
	_ = Write(&b, &Table{Columns: []Column{{Header: "text"}}, Rows: [][]string{{"a\nb\tc"}}}, Options{})
	if !strings.Contains(b.String(), "│ a⏎b⇥c │") || strings.Count(b.String(), "\n") != 5 {
		t.Errorf("cell broke the layout:\n%s", b.String())
	}
}

// Paths are shortened in the middle while that keeps rows apart; when it
// would not, the rows are drawn as blocks with each path whole, never
// split across lines (issue 29, item 12); identifiers and numbers stay
// whole.
func TestTableKinds(t *testing.T) {
	cols := []Column{{Header: "id", Kind: ID}, {Header: "n", Right: true}, {Header: "path", Kind: Path}}
	row := func(id, path string) []string { return []string{id, "1234", path} }
	apart := &Table{Columns: cols, Rows: [][]string{
		row("run-a", "tinker://3004660f-0000-5000-8000-000000000001:train:0/weights/0001"),
		row("run-b", "tinker://3004660f-0000-5000-8000-000000000001:train:1/weights/0001"),
	}}
	var b bytes.Buffer
	_ = Write(&b, apart, Options{Width: 50})
	for _, want := range []string{"│ run-a │ 1234 │ tinker://3…train:0/weights/0001 │", "│ run-b │ 1234 │ tinker://3…train:1/weights/0001 │"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want %q in\n%s", want, b.String())
		}
	}
	// Same head and tail: shortening would make the rows look alike.
	alike := &Table{Columns: cols, Rows: [][]string{
		row("run-a", "tinker://3004660f-0000-5000-8000-000000000001:train:0/weights/0001"),
		row("run-b", "tinker://3004660f-0000-5000-8000-000000000002:train:0/weights/0001"),
	}}
	b.Reset()
	_ = Write(&b, alike, Options{Width: 50})
	if strings.Contains(b.String(), "…") || !strings.Contains(b.String(), "\npath  tinker://3004660f-0000-5000-8000-000000000002:train:0/weights/0001\n") {
		t.Errorf("paths that shortening makes alike must be drawn whole:\n%s", b.String())
	}
	// Too narrow for the whole columns: one block per row.
	b.Reset()
	_ = Write(&b, apart, Options{Width: 20})
	for _, want := range []string{"\nid    run-a\nn     1234\npath  tinker://3004660f-0000-5000-8000-000000000001:train:0/weights/0001\n", "\nid    run-b\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("want block %q in\n%s", want, b.String())
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if w := len([]rune(line)); w > 20 && !strings.Contains(line, "tinker://") {
			t.Errorf("block line wider than 20: %q", line)
		}
	}
}

// A terminal narrower than the keys (TINKER_FORCE_TTY=1, a split pane)
// falls back to blocks; it must draw them, not panic on a negative pad.
func TestBlocksAtTinyWidths(t *testing.T) {
	tab := &Table{Title: "steps", Columns: []Column{{Header: "step"}, {Header: "train_loss"}}, Rows: [][]string{{"1", "6.141"}}}
	for width := 1; width <= 6; width++ {
		var b bytes.Buffer
		if err := Write(&b, tab, Options{Width: width}); err != nil {
			t.Fatalf("width %d: %v", width, err)
		}
		if !strings.Contains(b.String(), "steps") && width >= 5 || !strings.Contains(b.String(), "6") {
			t.Errorf("width %d: title or value missing:\n%s", width, b.String())
		}
	}
}

// A tinker:// path in free text or a title is never split: where it is
// longer than the line it stands alone on its line, whole (issue 29,
// item 12).
func TestPathsNeverSplit(t *testing.T) {
	const p = "tinker://3004660f-0000-5000-8000-000000000001:train:0/sampler_weights/final"
	rec := &Record{Title: "Checkpoint " + p, Fields: []Field{{Name: "Tinker Path", Value: p}, {Name: "Note", Value: "resume from " + p + " later"}}}
	for _, width := range []int{40, 60, 80} {
		var b bytes.Buffer
		if err := Write(&b, rec.Table(), Options{Width: width}); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(b.String(), p); n != 3 {
			t.Errorf("width %d: the path appears whole %d times, want 3:\n%s", width, n, b.String())
		}
	}
	if got := wrap("see "+p+" now", 30); len(got) != 3 || got[1] != p {
		t.Errorf("wrap = %q", got)
	}
}
