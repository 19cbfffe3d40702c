package render

import (
	"bytes"
	"strings"
	"testing"
)

// TestColorTableEscapes pins the bytes a coloured table carries: title
// italic, headers bold, first-column keys bright cyan, absent values
// faint, each closed by the reset of its own attribute (the bytes
// fatih/color wrote before render drew its four styles itself), and
// none at all with Color off.
func TestColorTableEscapes(t *testing.T) {
	tab := &Table{Title: "runs", Columns: []Column{{Header: "id"}, {Header: "loss"}}, Rows: [][]string{{"r1", Missing}}}
	var b bytes.Buffer
	if err := Write(&b, tab, Options{Color: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\x1b[3mruns\x1b[23m", "\x1b[1mid\x1b[22m", "\x1b[1mloss\x1b[22m",
		"\x1b[96mr1\x1b[0m", "\x1b[2m" + Missing + "\x1b[22m",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("coloured table lacks %q:\n%q", want, b.String())
		}
	}
	if n := strings.Count(b.String(), "\x1b["); n != 10 {
		t.Errorf("coloured table has %d escapes, want 10 (5 styled texts):\n%q", n, b.String())
	}
	b.Reset()
	if err := Write(&b, tab, Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("table without Color has escapes:\n%q", b.String())
	}
}

// TestColorBlocksEscapes does the same for a record drawn as blocks.
func TestColorBlocksEscapes(t *testing.T) {
	tab := &Table{Title: "run", Vertical: true, Columns: []Column{{Header: "Property"}, {Header: "Value"}},
		Rows: [][]string{{"id", "r1"}, {"loss", Missing}}}
	var b bytes.Buffer
	if err := Write(&b, tab, Options{Color: true, Width: 8}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\x1b[3mrun\x1b[23m", "\x1b[1mid\x1b[22m", "\x1b[2m" + Missing + "\x1b[22m"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("coloured blocks lack %q:\n%q", want, b.String())
		}
	}
}
