package shell

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/term"
	"go.starlark.net/starlark"
)

// row is a minimal record value for display tests.
type row struct{ i int }

func (r row) String() string        { return fmt.Sprintf("row(%d)", r.i) }
func (r row) Type() string          { return "row" }
func (r row) Freeze()               {}
func (r row) Truth() starlark.Bool  { return true }
func (r row) Hash() (uint32, error) { return uint32(r.i), nil }
func (r row) Record(time.Time) *render.Record {
	return &render.Record{Title: "row", Fields: []render.Field{{Name: "i", Value: fmt.Sprint(r.i)}}}
}
func (r row) RowColumns() []render.Column {
	return []render.Column{{Header: "index", Right: true}, {Header: "name"}, {Header: "path"}}
}
func (r row) Row(time.Time) []string {
	return []string{fmt.Sprint(r.i), fmt.Sprintf("checkpoint-%05d", r.i), fmt.Sprintf("tinker://run-%d:train:0/sampler_weights/%05d", r.i%97, r.i)}
}
func (r row) ListTitle(n int) string { return fmt.Sprintf("%d rows", n) }

var _ builtins.RecordValue = row{}

func rows(n int) *starlark.List {
	l := make([]starlark.Value, n)
	for i := range l {
		l[i] = row{i}
	}
	return starlark.NewList(l)
}

func ttyDisplay(out *bytes.Buffer) *Display {
	io := term.Test(nil, out, out)
	io.OutTTY, io.Width = true, 100
	return &Display{IO: io, Elide: true, Now: func() time.Time { return time.Unix(0, 0) }}
}

func TestLongListShowsHeadAndTail(t *testing.T) {
	var out bytes.Buffer
	if err := ttyDisplay(&out).Show(rows(10000)); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"10000 rows", "checkpoint-00000", "checkpoint-09999", "9,960 of 10,000 rows hidden"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "checkpoint-05000") {
		t.Error("middle row drawn")
	}
	if n := strings.Count(s, "\n"); n != PromptMaxRows+7 {
		t.Errorf("%d lines, want %d", n, PromptMaxRows+7)
	}
}

func TestOffTerminalShowsEveryRow(t *testing.T) {
	var out bytes.Buffer
	d := &Display{IO: term.Test(nil, &out, &out), Elide: true}
	if err := d.Show(rows(100)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "checkpoint-00050") {
		t.Error("middle row missing off a terminal")
	}
}

// BenchmarkDisplay10k measures showing a 10,000-row list at the prompt.
func BenchmarkDisplay10k(b *testing.B) {
	l := rows(10000)
	var out bytes.Buffer
	d := ttyDisplay(&out)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		if err := d.Show(l); err != nil {
			b.Fatal(err)
		}
	}
}

// Show's shortcut for Starlark's own scalars prints what the general path
// does, byte for byte, on a terminal and off it; with --format json they
// take the general path.
func TestShowScalarsAsTheGeneralPath(t *testing.T) {
	big := starlark.MakeInt64(1 << 62).Mul(starlark.MakeInt64(1 << 62))
	vals := []starlark.Value{
		starlark.MakeInt(2), starlark.MakeInt(-7), big, starlark.Float(0.1), starlark.Float(1e300 * 10),
		starlark.Float(-0.0), starlark.True, starlark.False, starlark.String(""), starlark.String("a\"b"),
		starlark.String("two\nlines\x1b[31m\tand é ✓"),
		starlark.Float(math.NaN()), starlark.Float(math.Inf(-1)), starlark.Float(1e100), starlark.Float(-1.5e-7),
		big.Mul(starlark.MakeInt(-3)),
	}
	// Ints, floats and bools skip render.PrintableLines (one page of code
	// less at the start): their text must be what it would return.
	for _, v := range vals {
		if _, isString := v.(starlark.String); !isString && render.PrintableLines(v.String()) != v.String() {
			t.Errorf("%s (%s) has text PrintableLines would escape", v, v.Type())
		}
	}
	for _, tty := range []bool{false, true} {
		for _, v := range vals {
			var fast, general bytes.Buffer
			df := &Display{IO: term.Test(nil, &fast, &fast)}
			dg := &Display{IO: term.Test(nil, &general, &general)}
			df.IO.OutTTY, dg.IO.OutTTY = tty, tty
			if _, ok := df.plainScalar(v); !ok {
				t.Fatalf("%s (%s) does not take the shortcut", v, v.Type())
			}
			if err := df.Show(v); err != nil {
				t.Fatal(err)
			}
			if err := dg.show(v); err != nil {
				t.Fatal(err)
			}
			if fast.String() != general.String() {
				t.Errorf("tty=%v %s: shortcut printed %q, general path %q", tty, v.Type(), fast.String(), general.String())
			}
		}
	}
	if _, ok := (&Display{JSON: true}).plainScalar(starlark.MakeInt(2)); ok {
		t.Error("--format json took the shortcut")
	}
}
