package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one conversation turn, in the shape of the cookbook's (and
// OpenAI's) messages: content is a string or a list of text/thinking parts;
// assistant turns may carry tool_calls, tool results a tool_call_id and name.
type Message struct {
	Role     string `json:"role"` // system, developer, user, assistant, tool
	Content  string `json:"content"`
	Thinking string `json:"thinking,omitempty"` // assistant reasoning, if any

	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"` // on a tool result: the call it answers
	Name       string     `json:"name,omitempty"`         // on a tool result: the function called
	// Trainable marks the message for train_on "customized".
	Trainable *bool `json:"trainable,omitempty"`

	// Parts is the content when it was given as a list of parts (the
	// cookbook renders a list differently from a string in places); Content
	// then holds the parts' text joined.
	Parts []Part `json:"-"`
}

// Part is one element of list content: {"type": "text", "text": ...} or
// {"type": "thinking", "thinking": ...}.
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Thinking string `json:"thinking,omitempty"`
}

// ToolCall is an assistant's call of a function, as OpenAI writes it:
// arguments are a JSON object encoded as a string.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is the called function's name and JSON arguments.
type ToolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// UnmarshalJSON reads content as a string or a list of parts, and a tool
// call's arguments as a JSON string or an object (kept in its key order).
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	var raw struct {
		plain
		Content   json.RawMessage   `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Message(raw.plain)
	if err := m.setContent(raw.Content); err != nil {
		return err
	}
	if m.Parts != nil && m.Thinking != "" {
		return fmt.Errorf("give reasoning either as \"thinking\" or as a thinking part of the content list, not both")
	}
	m.ToolCalls = nil
	for i, c := range raw.ToolCalls {
		tc, err := parseToolCall(c)
		if err != nil {
			return fmt.Errorf("tool_calls[%d]: %w", i, err)
		}
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	return nil
}

func (m *Message) setContent(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		return json.Unmarshal(raw, &m.Content)
	}
	var parts []Part
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("content must be a string or a list of {\"type\": \"text\"|\"thinking\", ...} parts")
	}
	var text strings.Builder
	for i, p := range parts {
		switch p.Type {
		case "text":
			text.WriteString(p.Text)
		case "thinking":
		case "image", "image_url":
			return fmt.Errorf("content part %d is an image: tinker's renderers are text-only; remove the image or describe it in text", i)
		default:
			return fmt.Errorf("content part %d has type %q (want text or thinking)", i, p.Type)
		}
	}
	m.Content, m.Parts = text.String(), parts
	return nil
}

// MarshalJSON writes list content back as a list.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	if m.Parts == nil {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		plain
		Content []Part `json:"content"`
	}{plain(m), m.Parts})
}

func parseToolCall(raw json.RawMessage) (ToolCall, error) {
	var tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &tc); err != nil {
		return ToolCall{}, fmt.Errorf("want {\"function\": {\"name\": ..., \"arguments\": ...}}: %w", err)
	}
	if tc.Function.Name == "" {
		return ToolCall{}, fmt.Errorf("no function name")
	}
	args := bytes.TrimSpace(tc.Function.Arguments)
	var s string
	switch {
	case len(args) == 0:
		s = "{}"
	case args[0] == '"':
		if err := json.Unmarshal(args, &s); err != nil {
			return ToolCall{}, err
		}
	default: // an object given inline: as Python's json.dumps writes it
		var err error
		if s, err = pyCompact(string(args)); err != nil {
			return ToolCall{}, fmt.Errorf("arguments: %w", err)
		}
	}
	return ToolCall{ID: tc.ID, Type: tc.Type, Function: ToolFunction{Name: tc.Function.Name, Arguments: s}}, nil
}

// parts is the message's content as the cookbook sees it: the list when
// one was given (or reasoning sits in Thinking), nil for string content.
func (m Message) parts() []Part {
	if m.Parts != nil {
		return m.Parts
	}
	if m.Thinking != "" {
		return []Part{{Type: "thinking", Thinking: m.Thinking}, {Type: "text", Text: m.Content}}
	}
	return nil
}

// hasContent is Python's truthiness of the cookbook's message["content"].
func (m Message) hasContent() bool { return m.Content != "" || len(m.parts()) > 0 }

// hasThinking is the cookbook's has_thinking: list content with a
// thinking part, or string content with an opening <think>.
func (m Message) hasThinking() bool {
	ps := m.parts()
	if ps == nil {
		return strings.Contains(m.Content, "<think>")
	}
	for _, p := range ps {
		if p.Type == "thinking" {
			return true
		}
	}
	return false
}

// ensureText is the cookbook's ensure_text: string content, or a list of
// exactly one text part; anything else is refused.
func (m Message) ensureText(renderer string) (string, error) {
	ps := m.parts()
	switch {
	case ps == nil:
		return m.Content, nil
	case len(ps) == 1 && ps[0].Type == "text":
		return ps[0].Text, nil
	}
	return "", fmt.Errorf("%s renders the content of a %s message only as plain text, and this one has %d parts (reasoning or several text parts): join them into one string", renderer, m.Role, len(ps))
}

// joined is list content rendered part by part (thinking through think, or
// dropped when think is nil), or the string content.
func (m Message) joined(think func(string) string) string {
	ps := m.parts()
	if ps == nil {
		return m.Content
	}
	var b strings.Builder
	for _, p := range ps {
		switch {
		case p.Type == "text":
			b.WriteString(p.Text)
		case p.Type == "thinking" && think != nil:
			b.WriteString(think(p.Thinking))
		}
	}
	return b.String()
}

// textAndThinking is every text part joined and every thinking part joined.
func (m Message) textAndThinking() (text, thinking string) {
	ps := m.parts()
	if ps == nil {
		return m.Content, ""
	}
	var t, r strings.Builder
	for _, p := range ps {
		if p.Type == "text" {
			t.WriteString(p.Text)
		} else {
			r.WriteString(p.Thinking)
		}
	}
	return t.String(), r.String()
}

func errTextOnly(what string, m Message) error {
	return fmt.Errorf("%s takes a %s message as plain text, not a list of parts: join them into one string", what, m.Role)
}
