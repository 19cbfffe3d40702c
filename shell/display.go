package shell

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/term"
	"go.starlark.net/starlark"
)

// PromptMaxRows is how many rows of a long table the prompt draws on a
// terminal (head and tail); off a terminal every row is printed.
const PromptMaxRows = 40

// Display decides how values look: tables and records on a terminal or as
// plain text, or JSON with --format json.
type Display struct {
	IO   *term.IO
	JSON bool
	Now  func() time.Time
	// Elide draws only head and tail rows of long tables on a terminal.
	Elide bool
	// Page shows a long text (help) through a pager and reports whether
	// it did; nil outside the prompt.
	Page func(text string) bool
}

// IsRich reports whether v displays as something other than its repr.
func (d *Display) IsRich(v starlark.Value) bool {
	switch v.(type) {
	case builtins.Tabular, builtins.RecordValue, builtins.TextValue:
		return true
	}
	_, ok := recordList(v)
	return ok
}

// Show writes v to stdout the way the prompt displays values. None shows
// nothing.
func (d *Display) Show(v starlark.Value) error {
	if v == starlark.None {
		return nil
	}
	if text, ok := d.plainScalar(v); ok {
		_, err := io.WriteString(d.IO.Out, text+"\n")
		return err
	}
	return d.show(v)
}

// plainScalar is the text of Starlark's own scalars (int, float, bool,
// string) off JSON output. They have none of the forms show looks for
// (text, JSON, table, chart), and skipping those checks spares a
// short-lived process such as `tinker -c '1+1'` a first lookup of an
// interface table each, and fmt's first printer.
func (d *Display) plainScalar(v starlark.Value) (string, bool) {
	if d.JSON {
		return "", false
	}
	switch v := v.(type) {
	case starlark.Int, starlark.Float, starlark.Bool:
		// Digits, signs, '.', 'e', inf, nan, True, False: nothing to
		// escape, and no call into lib/render, whose code would be one
		// more page to fault in (TestShowScalarsAsTheGeneralPath).
		return v.String(), true
	case starlark.String:
		return render.PrintableLines(v.String()), true
	}
	return "", false
}

// show writes any value but None as Show does.
func (d *Display) show(v starlark.Value) error {
	if err := checkRenderable(context.Background(), v); err != nil {
		return err
	}
	// Text (a help page) is text in any format, unless the value also
	// has a JSON form.
	_, hasJSON := v.(builtins.JSONValue)
	if t, ok := v.(builtins.TextValue); ok && !(d.JSON && hasJSON) {
		text := t.Text()
		if d.IO.OutTTY {
			text = wrapText(text, d.IO.Width)
		}
		if d.Page != nil && d.Page(text) {
			return nil
		}
		_, err := fmt.Fprintln(d.IO.Out, text)
		return err
	}
	if d.JSON {
		j, err := builtins.ToJSON(v)
		if err != nil {
			return err
		}
		return render.WriteJSON(d.IO.Out, j, render.JSONOptions{Indent: true})
	}
	if t := d.TableOf(v); t != nil {
		if err := d.WriteTable(d.IO.Out, t); err != nil {
			return err
		}
		if c, ok := v.(builtins.ChartValue); ok && d.IO.OutTTY {
			_, err := fmt.Fprintln(d.IO.Out, c.Chart(d.IO.Width))
			return err
		}
		return nil
	}
	text := v.String()
	if empty := builtins.EmptyText(v); empty != "" {
		text = empty
	}
	_, err := fmt.Fprintln(d.IO.Out, render.PrintableLines(text))
	return err
}

// TableOf returns the table a value displays as, or nil for plain values
// (a Tabular may decline with a nil table and then displays as its String).
func (d *Display) TableOf(v starlark.Value) *render.Table {
	now := d.now()
	switch x := v.(type) {
	case builtins.Tabular:
		return x.Table(now)
	case builtins.RecordValue:
		return x.Record(now).Table()
	}
	if recs, ok := recordList(v); ok {
		first := recs[0]
		t := &render.Table{Title: first.ListTitle(len(recs)) + builtins.CappedSuffix(v), Columns: first.RowColumns()}
		if max := d.maxRows(); max > 0 && len(recs) > max {
			// Format only the rows that will be drawn.
			head := max - render.TailRows
			t.GapAt, t.Omitted = head, len(recs)-max
			recs = append(recs[:head:head], recs[len(recs)-render.TailRows:]...)
		}
		t.Rows = make([][]string, len(recs))
		for i, r := range recs {
			t.Rows[i] = r.Row(now)
		}
		return t
	}
	return nil
}

// WriteTable draws t fitted to the stream.
func (d *Display) WriteTable(w io.Writer, t *render.Table) error {
	o := render.Options{Color: d.IO.ColorOut, MaxRows: d.maxRows()}
	if d.IO.OutTTY {
		o.Width = d.IO.Width
		if t.HeadTail {
			o.MaxRows = PromptMaxRows
		}
	} else {
		o.Width = t.PipedWidth
	}
	return render.Write(w, t, o)
}

// maxRows is the row limit for tables: only on a terminal, only when eliding.
func (d *Display) maxRows() int {
	if d.IO.OutTTY && d.Elide {
		return PromptMaxRows
	}
	return 0
}

func (d *Display) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// recordList reports whether v is a non-empty list or tuple of records of
// one type, which displays as a table.
func recordList(v starlark.Value) ([]builtins.RecordValue, bool) {
	var seq starlark.Indexable
	switch x := v.(type) {
	case *starlark.List:
		seq = x
	case starlark.Tuple:
		seq = x
	default:
		return nil, false
	}
	n := seq.Len()
	if n == 0 {
		return nil, false
	}
	out := make([]builtins.RecordValue, n)
	for i := 0; i < n; i++ {
		r, ok := seq.Index(i).(builtins.RecordValue)
		if !ok || (i > 0 && r.Type() != out[0].Type()) {
			return nil, false
		}
		out[i] = r
	}
	return out, true
}
