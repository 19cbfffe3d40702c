package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/tinkershell/tinker/lib/chat"
)

// ReadPrompts reads a prompts file, one JSON value a line (blank lines are
// skipped): a string (text), a list of token ids, a list of
// {"role", "content"} messages, or an object with exactly one of "prompt"
// (or "text"), "tokens" and "messages" and optionally an "id" (string or
// number); other keys are ignored, so a file may carry reference answers.
// A prompt without an id is named by its line number, counted from 1.
func ReadPrompts(r io.Reader) ([]Prompt, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var out []Prompt
	seen := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		p, err := parsePrompt(b)
		if err != nil {
			return nil, fmt.Errorf("prompts line %d: %w", line, err)
		}
		if p.ID == "" {
			p.ID = strconv.Itoa(line)
		}
		if prev, dup := seen[p.ID]; dup {
			return nil, fmt.Errorf("prompts line %d: id %q is already used on line %d", line, p.ID, prev)
		}
		seen[p.ID] = line
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read prompts: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("the prompts file has no prompts")
	}
	return out, nil
}

func parsePrompt(b []byte) (Prompt, error) {
	var p Prompt
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return p, fmt.Errorf("not a JSON string: %w", err)
		}
		p.Text = &s
	case '[':
		if err := parseList(b, &p); err != nil {
			return p, err
		}
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return p, fmt.Errorf("not a JSON object: %w", err)
		}
		if raw, ok := m["id"]; ok {
			id, err := parseID(raw)
			if err != nil {
				return p, err
			}
			p.ID = id
		}
		given := 0
		for _, k := range []string{"prompt", "text", "tokens", "messages"} {
			raw, ok := m[k]
			if !ok {
				continue
			}
			given++
			var err error
			switch k {
			case "prompt", "text":
				var s string
				if err = json.Unmarshal(raw, &s); err != nil {
					err = fmt.Errorf("%q must be a string", k)
				}
				p.Text = &s
			case "tokens":
				if err = json.Unmarshal(raw, &p.Tokens); err != nil {
					err = errors.New(`"tokens" must be a list of token ids`)
				}
			case "messages":
				if err = json.Unmarshal(raw, &p.Messages); err != nil {
					err = errors.New(`"messages" must be a list of {"role", "content"} objects`)
				}
			}
			if err != nil {
				return p, err
			}
		}
		if given != 1 {
			return p, errors.New(`give exactly one of "prompt", "tokens" and "messages"`)
		}
	default:
		return p, errors.New("want a JSON string, list or object")
	}
	return p, p.checkContent()
}

// parseList reads a bare list: token ids or messages.
func parseList(b []byte, p *Prompt) error {
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("not a JSON list: %w", err)
	}
	if len(items) == 0 {
		return errors.New("the list is empty")
	}
	if bytes.HasPrefix(bytes.TrimSpace(items[0]), []byte("{")) {
		var msgs []chat.Message
		if err := json.Unmarshal(b, &msgs); err != nil {
			return errors.New(`want a list of {"role", "content"} messages`)
		}
		p.Messages = msgs
		return nil
	}
	var toks []int
	if err := json.Unmarshal(b, &toks); err != nil {
		return errors.New("want a list of token ids or of messages")
	}
	p.Tokens = toks
	return nil
}

func parseID(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, nil
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), nil
	}
	return "", errors.New(`"id" must be a non-empty string or a number`)
}

// checkContent is Prompt.check without the id, which may come later.
func (p Prompt) checkContent() error {
	p.ID = "-"
	return p.check()
}
