package chat

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
)

// pyDumps re-writes JSON text the way Python's json.dumps(json.loads(s))
// does with the given separators: keys in their order, non-ASCII as \uXXXX,
// floats as Python's repr. The cookbook embeds tool specs and call
// arguments this way, so the bytes (and tokens) must be the same.
func pyDumps(s, itemSep, keySep string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var b strings.Builder
	if err := pyValue(dec, &b, itemSep, keySep); err != nil {
		return "", fmt.Errorf("invalid JSON %q: %w", s, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("invalid JSON %q: text after the value", s)
	}
	return b.String(), nil
}

func pyValue(dec *json.Decoder, b *strings.Builder, itemSep, keySep string) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	switch x := t.(type) {
	case json.Delim:
		return pyContainer(dec, b, x, itemSep, keySep)
	case string:
		pyString(b, x)
	case json.Number:
		return pyNumber(b, string(x))
	case bool:
		b.WriteString(map[bool]string{true: "true", false: "false"}[x])
	case nil:
		b.WriteString("null")
	}
	return nil
}

func pyContainer(dec *json.Decoder, b *strings.Builder, open json.Delim, itemSep, keySep string) error {
	closing := map[json.Delim]string{'{': "}", '[': "]"}[open]
	b.WriteString(string(open))
	for i := 0; dec.More(); i++ {
		if i > 0 {
			b.WriteString(itemSep)
		}
		if open == '{' {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			pyString(b, k.(string))
			b.WriteString(keySep)
		}
		if err := pyValue(dec, b, itemSep, keySep); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	b.WriteString(closing)
	return nil
}

func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (r >= 0x7f && r < 0x10000):
			fmt.Fprintf(b, `\u%04x`, r)
		case r >= 0x10000:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// pyNumber writes an integer as its value and any other number as
// Python's repr of the float.
func pyNumber(b *strings.Builder, s string) error {
	if !strings.ContainsAny(s, ".eE") {
		b.WriteString(pyInt(s))
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return err
	}
	b.WriteString(pyFloatRepr(f))
	return nil
}

// pyInt is a JSON integer as Python prints int(s): "-0" is 0, any size.
func pyInt(s string) string {
	d := strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
	switch {
	case d == "":
		return "0"
	case strings.HasPrefix(s, "-"):
		return "-" + d
	}
	return d
}

// pyFloatRepr is Python's repr(float): the shortest round-trip digits,
// positional for exponents -4..15, else d.ddde±XX.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±dd
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	out := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(out, ".") {
		out += ".0"
	}
	return out
}

// pyCompact is json.dumps's default layout (", " and ": ").
func pyCompact(s string) (string, error) { return pyDumps(s, ", ", ": ") }
