package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/tinkershell/tinker/lib/chat"
)

// Row is one data row as JSON, from a JSONL line or a script's list, with
// Where naming it for errors ("data.jsonl:3" or "data[3]"). Every loop
// reads its data as rows, so both sources fail with the same words.
type Row struct {
	JSON  []byte
	Where string
}

// LoadRows reads a JSONL file, one row per non-blank line. A line that is
// not JSON, or a file without rows, is an error naming it.
func LoadRows(path string) ([]Row, error) {
	var out []Row
	err := scanJSONL(path, func(text []byte, where string) error {
		if !json.Valid(text) {
			return fmt.Errorf("%s: not a JSON value", where)
		}
		out = append(out, Row{JSON: bytes.Clone(text), Where: where})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no rows", path)
	}
	return out, nil
}

// scanJSONL calls fn with each non-blank line of a JSONL file and where it
// stands ("data.jsonl:3"), stopping at fn's first error.
func scanJSONL(path string, fn func(text []byte, where string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if err := fn(text, fmt.Sprintf("%s:%d", path, line)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// fields decodes a row that must be a JSON object.
func (r Row) fields() (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.JSON, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: not a JSON object", r.Where)
	}
	return m, nil
}

// str is the string field key of m; missing or of another type is an
// error naming the row.
func (r Row) str(m map[string]json.RawMessage, key string) (string, error) {
	raw, ok := m[key]
	if !ok {
		return "", fmt.Errorf("%s: no %q", r.Where, key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: %q must be a string, got %s", r.Where, key, jsonKind(raw))
	}
	return s, nil
}

// messages is the "messages" field of m: a non-empty list of role/content
// objects.
func (r Row) messages(m map[string]json.RawMessage) ([]chat.Message, error) {
	raw, ok := m["messages"]
	if !ok {
		return nil, fmt.Errorf("%s: no \"messages\"", r.Where)
	}
	var msgs []chat.Message
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, fmt.Errorf("%s: \"messages\" must be a list of {\"role\": ..., \"content\": ...} objects%s", r.Where, messageDetail(err))
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%s: no messages", r.Where)
	}
	for i, msg := range msgs {
		if msg.Role == "" {
			return nil, fmt.Errorf("%s: message %d has no role", r.Where, i)
		}
	}
	return msgs, nil
}

// messageDetail is what chat.Message's own checks said (an image part, a
// bad tool call), " (…)"; nothing for a plain JSON type mismatch.
func messageDetail(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	if errors.As(err, &te) || errors.As(err, &se) {
		return ""
	}
	return " (" + err.Error() + ")"
}

// jsonKind names the JSON type of raw for errors.
func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '"':
		return "a string"
	case t[0] == '{':
		return "an object"
	case t[0] == '[':
		return "a list"
	case t[0] == 'n':
		return "null"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	}
	return "a number"
}
