package builtins

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

// FuzzJSONEncode checks that every way tinker prints JSON gives text a
// JSON parser accepts and that decodes to the original string (invalid
// UTF-8 bytes become U+FFFD).
func FuzzJSONEncode(f *testing.F) {
	for _, s := range []string{"", "plain", "a\x7fb", "\x7f", `\x7f`, "a\\\x7f", "\x00\x01\x1f", "tab\tnl\n\"q\"",
		"é ☃ 😀", "\u2028\u2029", "<&>", "\xff\xfe", "a\xc3", "\x7f\u00e9"} {
		f.Add(s)
	}
	module := Universe()["json"].(starlark.HasAttrs)
	encode, _ := module.Attr("encode")
	encodeIndent, _ := module.Attr("encode_indent")
	f.Fuzz(func(t *testing.T, s string) {
		want := validUTF8(s)
		thread := &starlark.Thread{}
		check := func(how, out string) {
			var got any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%s(%q) = %s: not JSON: %v", how, s, out, err)
			}
			if !jsonHolds(got, want) {
				t.Fatalf("%s(%q) = %s decodes to %q, want %q", how, s, out, got, want)
			}
		}
		for _, v := range []starlark.Value{starlark.String(s), starlark.NewList([]starlark.Value{starlark.String(s)})} {
			out, err := starlark.Call(thread, encode, starlark.Tuple{v}, nil)
			if err != nil {
				t.Fatal(err)
			}
			check("json.encode", string(out.(starlark.String)))
			out, err = starlark.Call(thread, encodeIndent, starlark.Tuple{v}, nil)
			if err != nil {
				t.Fatal(err)
			}
			check("json.encode_indent", string(out.(starlark.String)))
		}
		d := starlark.NewDict(1)
		d.SetKey(starlark.String(s), starlark.String(s))
		j, err := ToJSON(d)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := render.WriteJSON(&b, j, render.JSONOptions{Indent: true}); err != nil {
			t.Fatal(err)
		}
		var obj map[string]string
		if err := json.Unmarshal([]byte(b.String()), &obj); err != nil || len(obj) != 1 || obj[want] != want {
			t.Fatalf("--format json of {%q: %q} = %s: %v", s, s, b.String(), err)
		}
	})
}

// jsonHolds reports whether a decoded JSON value is want or [want].
func jsonHolds(got any, want string) bool {
	if l, ok := got.([]any); ok && len(l) == 1 {
		got = l[0]
	}
	s, ok := got.(string)
	return ok && s == want
}

// validUTF8 replaces each invalid byte with U+FFFD, as JSON encoders do.
func validUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += n
	}
	return b.String()
}
