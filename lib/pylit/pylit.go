// Package pylit renders JSON documents the way Python prints the value that
// json.loads returns: single-quoted strings with repr escaping,
// True/False/None, repr-style floats and insertion-ordered dicts.
//
// The official Tinker SDK builds its error messages as
// f"Error code: {status} - {body}" from the parsed JSON body, so matching
// those messages byte for byte needs this rendering
// (docs/compat.md, "API errors and retries").
package pylit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Render parses one JSON document and returns its Python literal form.
// It fails on invalid JSON or trailing data.
func Render(doc []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var b strings.Builder
	if err := renderValue(&b, dec); err != nil {
		return "", err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", errors.New("pylit: trailing data after JSON value")
	}
	return b.String(), nil
}

func renderValue(b *strings.Builder, dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("pylit: %w", err)
	}
	return renderToken(b, dec, tok)
}

func renderToken(b *strings.Builder, dec *json.Decoder, tok json.Token) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			b.WriteByte('{')
			for first := true; dec.More(); first = false {
				if !first {
					b.WriteString(", ")
				}
				key, err := dec.Token()
				if err != nil {
					return fmt.Errorf("pylit: %w", err)
				}
				b.WriteString(Str(key.(string)))
				b.WriteString(": ")
				if err := renderValue(b, dec); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // '}'
				return fmt.Errorf("pylit: %w", err)
			}
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for first := true; dec.More(); first = false {
				if !first {
					b.WriteString(", ")
				}
				if err := renderValue(b, dec); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ']'
				return fmt.Errorf("pylit: %w", err)
			}
			b.WriteByte(']')
		default:
			return fmt.Errorf("pylit: unexpected %q", rune(t))
		}
	case string:
		b.WriteString(Str(t))
	case json.Number:
		s, err := Number(string(t))
		if err != nil {
			return err
		}
		b.WriteString(s)
	case bool:
		if t {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case nil:
		b.WriteString("None")
	default:
		return fmt.Errorf("pylit: unexpected token %v", tok)
	}
	return nil
}

// Number renders a JSON number literal as Python's json module would parse
// and print it: literals with a fraction or exponent become floats, the
// rest arbitrary-precision ints.
func Number(lit string) (string, error) {
	if !strings.ContainsAny(lit, ".eE") {
		n, ok := new(big.Int).SetString(lit, 10)
		if !ok {
			return "", fmt.Errorf("pylit: bad number %q", lit)
		}
		return n.String(), nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", fmt.Errorf("pylit: bad number %q", lit)
	}
	return Float(f), nil
}

// Float renders f like Python's repr(float): the shortest round-tripping
// digits, positional notation for exponents in [-4, 16), otherwise
// scientific with a signed, at least two-digit exponent.
func Float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	// Go's shortest 'e' form is d.ddde±XX; take the digits and exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1 // value = 0.<digits> × 10^decpt
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			return sign + "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			return sign + digits[:decpt] + "." + digits[decpt:]
		}
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}

// Str renders s like Python's repr(str): single quotes unless the text
// contains a single quote and no double quote, backslash escapes for the
// quote, backslash, \t \n \r and non-printable characters.
func Str(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < utf8.RuneSelf || isPrintable(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// isPrintable approximates Python's str.isprintable for one non-ASCII
// character: graphic characters except separators other than U+0020.
func isPrintable(r rune) bool {
	return unicode.IsPrint(r)
}
