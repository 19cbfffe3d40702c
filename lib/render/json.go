package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/tinkershell/tinker/lib/jsonscan"
)

// Object is a JSON object whose keys keep their order, as the official CLI
// prints model fields in declaration order.
type Object []Member

// Member is one key of an Object.
type Member struct {
	Key   string
	Value any
}

// Get returns the value of key, if present.
func (o Object) Get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// RawFloat is a float that prints in Python repr form ("2.0", not "2").
type RawFloat float64

// JSONOptions select between the CLI's two JSON styles.
type JSONOptions struct {
	// Indent pretty-prints with two spaces (the CLI's default output).
	Indent bool
	// Compact uses Python's default separators ", " and ": " on one line
	// (the CLI's `checkpoint delete` result). Ignored when Indent is set.
	Compact bool
}

// WriteJSON writes v followed by a newline. Non-ASCII characters are escaped
// as \uXXXX and <, >, & are left alone, as Python's json.dumps does.
// Supported values: nil, bool, ints, floats, RawFloat, string, []any,
// Object, map[string]any (sorted keys), json.Marshaler and []Object.
func WriteJSON(w io.Writer, v any, o JSONOptions) error {
	// Stream through a buffered writer: large listings (10,000 checkpoints)
	// would otherwise spend their time growing one big buffer.
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := encode(bw, v, o, 0); err != nil {
		return err
	}
	bw.WriteByte('\n')
	return bw.Flush()
}

// jsonWriter is what encode needs; bytes.Buffer and bufio.Writer have it.
type jsonWriter interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}

// MarshalJSON renders v on one line in the CLI's compact style.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	err := encode(&b, v, JSONOptions{}, 0)
	return b.Bytes(), err
}

func newline(b jsonWriter, o JSONOptions, depth int) {
	if o.Indent {
		b.WriteByte('\n')
		const most = len(indents) / 2 // levels
		for ; depth > most; depth -= most {
			b.WriteString(indents)
		}
		b.WriteString(indents[:2*depth])
	}
}

func sep(o JSONOptions) (item, key string) {
	switch {
	case o.Indent:
		return ",", ": "
	case o.Compact:
		return ", ", ": "
	default:
		return ",", ":"
	}
}

// encodeItems writes n items between open and close, one a line when
// indenting; an empty container stays on one line.
func encodeItems(b jsonWriter, open, close byte, n int, o JSONOptions, depth int, item func(i int) error) error {
	b.WriteByte(open)
	if n == 0 {
		b.WriteByte(close)
		return nil
	}
	itemSep, _ := sep(o)
	for i := range n {
		if i > 0 {
			b.WriteString(itemSep)
		}
		newline(b, o, depth+1)
		if err := item(i); err != nil {
			return err
		}
	}
	newline(b, o, depth)
	b.WriteByte(close)
	return nil
}

func encode(b jsonWriter, v any, o JSONOptions, depth int) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case *int64:
		if x == nil {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.FormatInt(*x, 10))
		}
	case *int:
		if x == nil {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.Itoa(*x))
		}
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case float64:
		b.WriteString(PyFloat(x))
	case float32:
		b.WriteString(PyFloat(float64(x)))
	case RawFloat:
		b.WriteString(PyFloat(float64(x)))
	case string:
		writeString(b, x)
	case *string:
		if x == nil {
			b.WriteString("null")
		} else {
			writeString(b, *x)
		}
	case []any:
		return encodeItems(b, '[', ']', len(x), o, depth, func(i int) error {
			return encode(b, x[i], o, depth+1)
		})
	case []Object:
		l := make([]any, len(x))
		for i := range x {
			l[i] = x[i]
		}
		return encode(b, l, o, depth)
	case []string:
		l := make([]any, len(x))
		for i := range x {
			l[i] = x[i]
		}
		return encode(b, l, o, depth)
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[k] = v
		}
		return encode(b, m, o, depth)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		obj := make(Object, len(keys))
		for i, k := range keys {
			obj[i] = Member{k, x[k]}
		}
		return encode(b, obj, o, depth)
	case Object:
		_, keySep := sep(o)
		return encodeItems(b, '{', '}', len(x), o, depth, func(i int) error {
			writeString(b, x[i].Key)
			b.WriteString(keySep)
			return encode(b, x[i].Value, o, depth+1)
		})
	case json.RawMessage:
		var decoded any
		d := json.NewDecoder(bytes.NewReader(x))
		d.UseNumber()
		if err := d.Decode(&decoded); err != nil {
			return fmt.Errorf("render json: %w", err)
		}
		return encode(b, fromGo(decoded), o, depth)
	case json.Number:
		b.WriteString(x.String())
	case json.Marshaler:
		data, err := x.MarshalJSON()
		if err != nil {
			return err
		}
		return encode(b, json.RawMessage(data), o, depth)
	default:
		return fmt.Errorf("render json: unsupported value of type %T", v)
	}
	return nil
}

// fromGo converts encoding/json's decoded values; object key order is lost,
// so callers that care about order build Objects themselves.
func fromGo(v any) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = fromGo(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = fromGo(x[k])
		}
		return x
	}
	return v
}

const hexDigits = "0123456789abcdef"

// indents is the indentation of the deepest level written at once; depth
// d is its first 2·d bytes (a constant, not a table built at every start).
const indents = "                                "

// WriteJSONString writes s as a JSON string escaped as Python's json.dumps
// does (ensure_ascii), for callers that lay out the rest themselves.
func WriteJSONString(b jsonWriter, s string) { writeString(b, s) }

// AppendJSONString appends s as WriteJSONString writes it.
func AppendJSONString(dst []byte, s string) []byte {
	if PlainASCII(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b := bytes.NewBuffer(dst)
	writeString(b, s)
	return b.Bytes()
}

// writeString escapes like Python's json.dumps with ensure_ascii=True.
func writeString(b jsonWriter, s string) {
	b.WriteByte('"')
	if PlainASCII(s) {
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				if c < 0x20 || c == 0x7f {
					writeU(b, rune(c))
				} else {
					b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= 0x10000 {
			r1, r2 := surrogates(r)
			writeU(b, r1)
			writeU(b, r2)
		} else {
			writeU(b, r)
		}
		i += size
	}
	b.WriteByte('"')
}

// PlainASCII reports whether s is printable ASCII with no '"' or '\\': a
// JSON string body as it stands, which a writer (this package's, the local
// server's) copies unescaped.
func PlainASCII(s string) bool { return jsonscan.PlainPrefix(s) == len(s) }

func writeU(b jsonWriter, r rune) {
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>uint(shift))&0xF])
	}
}

func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}
