package config

import (
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// keyInfo is where a key is first defined and the kind of its value.
type keyInfo struct {
	line int
	kind unstable.Kind // Table for a [header] or a table implied by a dotted key
}

// keyIndex maps a key path (parts joined by keySep) to where it is defined.
// The decoder reports lines only for its own errors; this index gives them
// for the checks made after decoding. It stops at the first syntax error,
// keeping what came before.
type keyIndex map[string]keyInfo

const keySep = "\x00"

func joinKey(parts ...string) string { return strings.Join(parts, keySep) }

func indexKeys(data []byte) keyIndex {
	idx := keyIndex{}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			var line int
			table, line = keyParts(&p, nil, e.Key())
			idx.add(table, 0, line, e.Kind)
		case unstable.KeyValue:
			idx.addKeyValue(&p, table, e)
		}
	}
	return idx
}

// addKeyValue records a key = value line, the tables its dotted key implies
// and, for an inline table, the keys inside it.
func (idx keyIndex) addKeyValue(p *unstable.Parser, prefix []string, kv *unstable.Node) {
	path, line := keyParts(p, prefix, kv.Key())
	idx.add(path[:len(path)-1], len(prefix), line, unstable.Table)
	v := kv.Value()
	idx.add(path, len(path)-1, line, v.Kind)
	if v.Kind == unstable.InlineTable {
		it := v.Children()
		for it.Next() {
			idx.addKeyValue(p, path, it.Node())
		}
	}
}

// add records path and each of its parents longer than from parts, unless
// already defined.
func (idx keyIndex) add(path []string, from, line int, kind unstable.Kind) {
	for n := max(from, 1); n <= len(path); n++ {
		k := joinKey(path[:n]...)
		if _, ok := idx[k]; !ok {
			if n < len(path) {
				idx[k] = keyInfo{line: line, kind: unstable.Table}
			} else {
				idx[k] = keyInfo{line: line, kind: kind}
			}
		}
	}
}

// keyParts appends a dotted key's parts to prefix; line is where it starts.
func keyParts(p *unstable.Parser, prefix []string, it unstable.Iterator) ([]string, int) {
	path := append([]string(nil), prefix...)
	line := 0
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = p.Shape(n.Raw).Start.Line
		}
		path = append(path, string(n.Data))
	}
	return path, line
}

// fullKey completes a key the decoder reports by its last parts only (it
// does so inside inline tables) from the keys defined on the same line.
func (idx keyIndex) fullKey(key []string, line int) []string {
	if _, ok := idx[joinKey(key...)]; ok {
		return key
	}
	suffix := keySep + joinKey(key...)
	for k, info := range idx {
		if info.line == line && strings.HasSuffix(k, suffix) {
			return strings.Split(k, keySep)
		}
	}
	return key
}

// line is where a key is defined, or 0.
func (idx keyIndex) line(path ...string) int { return idx[joinKey(path...)].line }

// kindName says what a TOML value is, for error messages.
func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Bool:
		return "a boolean"
	case unstable.Integer, unstable.Float:
		return "a number"
	case unstable.Array:
		return "an array"
	case unstable.Table, unstable.InlineTable:
		return "a table"
	case unstable.ArrayTable:
		return "an array of tables"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "a date or time"
	}
	return "another kind of value"
}
