package chat

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tinkershell/tinker/lib/pylit"
	"github.com/tinkershell/tinker/lib/render"
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

// pyString is a JSON string as Python's json.dumps writes it.
func pyString(b *strings.Builder, s string) { render.WriteJSONString(b, s) }

// pyNumber writes a number as Python's json.dumps(json.loads(s)) does:
// integers at any size, other numbers as repr(float), infinities spelled
// as JSON's extension.
func pyNumber(b *strings.Builder, s string) error {
	n, err := pylit.Number(s)
	if err != nil {
		return err
	}
	switch n {
	case "inf":
		n = "Infinity"
	case "-inf":
		n = "-Infinity"
	}
	b.WriteString(n)
	return nil
}

// pyCompact is json.dumps's default layout (", " and ": ").
func pyCompact(s string) (string, error) { return pyDumps(s, ", ", ": ") }
