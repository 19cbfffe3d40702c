package render

import (
	"math/rand"
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	cases := []struct{ in, one, lines string }{
		{"plain name", "plain name", "plain name"},
		{"ckpt\x1b[2J\x07", `ckpt\x1b[2J\x07`, `ckpt\x1b[2J\x07`},
		{"a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\tc\\rd"},
		{"nul\x00del\x7f", `nul\x00del\x7f`, `nul\x00del\x7f`},
		{"c1\u009b31m", `c1\x9b31m`, `c1\x9b31m`},
		{"raw\x9bbyte", `raw\x9bbyte`, `raw\x9bbyte`},
		{"rtl\u202eevil", `rtl\u202eevil`, `rtl\u202eevil`},
		{"ünïcödé ✓ 名前", "ünïcödé ✓ 名前", "ünïcödé ✓ 名前"},
	}
	for _, c := range cases {
		if got := Printable(c.in); got != c.one {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.one)
		}
		if got := PrintableLines(c.in); got != c.lines {
			t.Errorf("PrintableLines(%q) = %q, want %q", c.in, got, c.lines)
		}
	}
}

// No control character from a cell, header or title reaches the output;
// the box drawing itself uses none.
func TestWriteEscapesControls(t *testing.T) {
	evil := "name\x1b]0;pwned\x07\x1b[31m"
	tb := &Table{
		Title:   "Checkpoints of " + evil,
		Columns: []Column{{Header: "Name\x1b[1m"}, {Header: "Size", Right: true}},
		Rows:    [][]string{{evil, "1 KB"}, {"two\nlines", "\x08\x08"}},
	}
	for _, o := range []Options{{}, {Width: 40}} {
		var b strings.Builder
		if err := Write(&b, tb, o); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, r := range out {
			if r < 0x20 && r != '\n' {
				t.Fatalf("control %q in output:\n%s", r, out)
			}
		}
		if o.Width == 0 && (!strings.Contains(out, `name\x1b]0;pwned\x07\x1b[31m`) || !strings.Contains(out, "two⏎lines") || !strings.Contains(out, `\x08\x08`)) {
			t.Errorf("escapes missing:\n%s", out)
		}
	}
}

// TestPlainASCIIMatchesBytewise: the vector test agrees with a byte loop
// at every length and alignment, on the bytes at its edges.
func TestPlainASCIIMatchesBytewise(t *testing.T) {
	edge := []byte{0x00, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7e, 0x7f, 0x80, 0xff, 'a'}
	r := rand.New(rand.NewSource(9))
	for range 20000 {
		b := make([]byte, r.Intn(40))
		for i := range b {
			if r.Intn(5) == 0 {
				b[i] = edge[r.Intn(len(edge))]
			} else {
				b[i] = byte(' ' + r.Intn(95))
			}
		}
		want := true
		for _, c := range b {
			want = want && c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
		}
		if got := PlainASCII(string(b)); got != want {
			t.Fatalf("PlainASCII(%q) = %v, want %v", b, got, want)
		}
	}
}

// TestAppendJSONStringMatchesWrite: appending gives WriteJSONString's bytes.
func TestAppendJSONStringMatchesWrite(t *testing.T) {
	for _, s := range []string{"", "plain", `quo"te`, `back\slash`, "nl\n\x01\x7f", "é 日本 🙂", "a\x80b"} {
		var want strings.Builder
		WriteJSONString(&want, s)
		if got := string(AppendJSONString([]byte("x"), s)); got != "x"+want.String() {
			t.Errorf("AppendJSONString(%q) = %q, want x%q", s, got, want.String())
		}
	}
}
