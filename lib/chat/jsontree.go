package chat

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/pylit"
)

// jsonNode is a parsed JSON value that keeps object keys in order, for
// formats that walk a tool's schema (gpt-oss writes it as TypeScript).
type jsonNode struct {
	kind byte // '{', '[', '"', '0' (number), 'b' (bool), 'z' (null)
	keys []string
	vals []*jsonNode
	str  string // a string's value; a number's or bool's JSON text
}

func parseJSONTree(s string) (*jsonNode, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	n, err := treeValue(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return n, nil
}

func treeValue(dec *json.Decoder, depth int) (*jsonNode, error) {
	if depth > 64 {
		return nil, fmt.Errorf("nested more than 64 deep")
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		n := &jsonNode{kind: byte(x)}
		for dec.More() {
			if x == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := treeValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		_, err := dec.Token()
		return n, err
	case string:
		return &jsonNode{kind: '"', str: x}, nil
	case json.Number:
		return &jsonNode{kind: '0', str: string(x)}, nil
	case bool:
		return &jsonNode{kind: 'b', str: fmt.Sprint(x)}, nil
	}
	return &jsonNode{kind: 'z'}, nil
}

// get is an object's member (nil when absent or not an object).
func (n *jsonNode) get(key string) *jsonNode {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// truthy is Python's truth of the value.
func (n *jsonNode) truthy() bool {
	switch {
	case n == nil || n.kind == 'z':
		return false
	case n.kind == '"':
		return n.str != ""
	case n.kind == '0':
		return strings.Trim(n.str, "-0.eE+") != ""
	case n.kind == 'b':
		return n.str == "true"
	}
	return len(n.vals) > 0
}

// text is Python's str() of a string value (other values as JSON).
func (n *jsonNode) text() string {
	if n.kind == '"' {
		return n.str
	}
	return n.dumps()
}

// dumps is Python's json.dumps of the value.
func (n *jsonNode) dumps() string {
	var b strings.Builder
	n.dump(&b, true)
	return b.String()
}

// dumpsUnicode is json.dumps(v, ensure_ascii=False): non-ASCII kept.
func (n *jsonNode) dumpsUnicode() string {
	var b strings.Builder
	n.dump(&b, false)
	return b.String()
}

func (n *jsonNode) dump(b *strings.Builder, ascii bool) {
	switch n.kind {
	case '"':
		if ascii {
			pyString(b, n.str)
		} else {
			unicodeString(b, n.str)
		}
	case '0':
		_ = pyNumber(b, n.str)
	case 'b':
		b.WriteString(n.str)
	case 'z':
		b.WriteString("null")
	default:
		b.WriteByte(n.kind)
		for i, v := range n.vals {
			if i > 0 {
				b.WriteString(", ")
			}
			if n.kind == '{' {
				(&jsonNode{kind: '"', str: n.keys[i]}).dump(b, ascii)
				b.WriteString(": ")
			}
			v.dump(b, ascii)
		}
		b.WriteByte(map[byte]byte{'{': '}', '[': ']'}[n.kind])
	}
}

// unicodeString is a JSON string as json.dumps(ensure_ascii=False) writes
// it: only quotes, backslashes and control characters escaped.
func unicodeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
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
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pyStr is Python's str() of the value: a string as it is, anything else
// as its repr (True, None, ['a', 1]).
func (n *jsonNode) pyStr() string {
	if n.kind == '"' {
		return n.str
	}
	r, err := pylit.Render([]byte(n.dumps()))
	if err != nil {
		return n.dumps() // cannot happen: dumps writes valid JSON
	}
	return r
}

// sortedCompact is json.dumps(v, separators=(",", ":"), sort_keys=True).
func (n *jsonNode) sortedCompact() string {
	switch n.kind {
	case '{':
		idx := make([]int, len(n.keys))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return n.keys[idx[a]] < n.keys[idx[b]] })
		var parts []string
		for _, i := range idx {
			var k strings.Builder
			pyString(&k, n.keys[i])
			parts = append(parts, k.String()+":"+n.vals[i].sortedCompact())
		}
		return "{" + strings.Join(parts, ",") + "}"
	case '[':
		var parts []string
		for _, v := range n.vals {
			parts = append(parts, v.sortedCompact())
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return n.dumps()
}
