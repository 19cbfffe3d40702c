package chat

import (
	"slices"
	"strings"
)

// nemotron is the cookbook's Nemotron 3 renderer family for text: the
// Qwen3.5 layout with Nemotron's template differences. An empty system
// message is always written first; every assistant turn whose reasoning
// does not show gets "<think></think>" (history's reasoning is dropped
// before the last user message unless preserve); reasoning is framed
// "<think>\n…\n</think>\n" (Ultra: "<think>\n…</think>"); tool results
// end with a newline; tool calls are Qwen3.5's XML, each followed by a
// newline. low/medium append an effort tag to the last user message.
type nemotron struct {
	ultra    bool
	off      bool   // the prompt is "<think></think>": no reasoning
	preserve bool   // keep history's reasoning
	effort   string // appended to the last user message ("" for none)
}

func (nemotron) bos(*enc) []int { return nil }

func (nemotron) stops(e *enc) ([]int, []string) { return []int{e.id("<|im_end|>")}, nil }

func (n nemotron) disablesThinking() bool { return n.off }

func (n nemotron) extension() bool { return n.preserve }

func (nemotron) frame(msgs []Message) []Message {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		return msgs
	}
	return append([]Message{{Role: "system"}}, msgs...)
}

func (n nemotron) genSuffix(e *enc, _ string, c msgCtx) ([]int, error) {
	return e.text(n.genText(c)), nil
}

func (n nemotron) genText(c msgCtx) string {
	nl := ""
	if c.idx > 0 {
		nl = "\n"
	}
	if n.off {
		return nl + "<|im_start|>assistant\n<think></think>"
	}
	return nl + "<|im_start|>assistant\n<think>\n"
}

func (n nemotron) message(e *enc, m Message, c msgCtx) (piece, error) {
	if m.Role == "user" && c.idx == c.lastUser && n.effort != "" {
		if m.parts() != nil {
			return piece{}, errTextOnly("nemotron reasoning-effort", m)
		}
		m.Content += "\n\n{reasoning effort: " + n.effort + "}"
	}
	if m.parts() == nil {
		m.Content = strings.TrimSpace(m.Content)
	}
	header := qwenHeader(m, c)
	switch {
	case m.Role == "tool" && c.prev != nil && c.prev.Role == "tool":
		header = ""
	case m.Role == "assistant":
		header += n.headerSuffix(m, c)
	}
	out, err := n.body(m, c)
	if err != nil {
		return piece{}, err
	}
	if !(m.Role == "tool" && c.next != nil && c.next.Role == "tool") {
		out += "<|im_end|>"
	}
	// Qwen3.5's rule of keeping the prompt's "<think>\n" in the header never
	// applies: Nemotron's header ends "<think></think>" or the role line.
	p := piece{header: e.text(header), output: [][]int{e.text(out)}}
	return p, nil
}

func (n nemotron) headerSuffix(m Message, c msgCtx) string {
	historical := c.idx < c.lastUser
	think := m.hasThinking()
	switch {
	case think && (!historical || n.preserve):
		return ""
	case !n.ultra && historical && think && hasNonEmptyText(m) && len(m.ToolCalls) == 0:
		return "<think></think>\n"
	}
	return "<think></think>"
}

func hasNonEmptyText(m Message) bool {
	for _, p := range m.parts() {
		if p.Type == "text" && p.Text != "" {
			return true
		}
	}
	return false
}

func (n nemotron) body(m Message, c msgCtx) (string, error) {
	frame := func(t string) string { return "<think>\n" + t + "\n</think>\n" }
	if n.ultra {
		frame = func(t string) string { return "<think>\n" + t + "</think>" }
	}
	strip := m.Role == "assistant" && !n.preserve && c.idx < c.lastUser
	out := qwenBody(m, strip, frame, "\n</tool_response>\n")
	if len(m.ToolCalls) == 0 {
		return out, nil
	}
	var calls strings.Builder
	for _, tc := range m.ToolCalls {
		x, err := (qwenVL{v: 35}).xmlToolCalls([]ToolCall{tc})
		if err != nil {
			return "", err
		}
		calls.WriteString(x + "\n")
	}
	if n.ultra || !listThinking(m) || hasNonEmptyText(m) {
		out += "\n"
	}
	return out + calls.String(), nil
}

// toolPrefix is Nemotron's system message: the system prompt, then the
// tools declared as XML, then Qwen3.5's call-format instructions.
func (nemotron) toolPrefix(tools []Tool, system string) ([]Message, error) {
	msgs, err := qwen35Tools(tools, "")
	if err != nil || len(tools) == 0 {
		return []Message{{Role: "system", Content: system}}, err
	}
	var decls []string
	for _, t := range tools {
		d, err := nemotronTool(t)
		if err != nil {
			return nil, err
		}
		decls = append(decls, d)
	}
	text := msgs[0].Content
	start, end := strings.Index(text, "<tools>\n"), strings.Index(text, "</tools>")
	text = text[:start] + "<tools>\n" + strings.Join(decls, "\n") + "\n" + text[end:]
	if system != "" {
		text = system + "\n\n" + text
	}
	return []Message{{Role: "system", Content: text}}, nil
}

func nemotronTool(t Tool) (string, error) {
	params, err := parseJSONTree(t.params())
	if err != nil {
		return "", err
	}
	lines := []string{"<function>", "<name>" + t.Name + "</name>"}
	if d := strings.TrimSpace(t.Description); d != "" {
		lines = append(lines, "<description>"+d+"</description>")
	}
	lines = append(lines, "<parameters>")
	if props := params.get("properties"); props != nil {
		for i, name := range props.keys {
			lines = append(lines, nemotronParam(name, props.vals[i])...)
		}
	}
	if params.kind == '{' {
		lines = append(lines, xmlExtraKeys(params, "type", "properties", "required")...)
	}
	if r := params.get("required"); r != nil {
		lines = append(lines, "<required>"+r.dumps()+"</required>")
	}
	return strings.Join(append(lines, "</parameters>", "</function>"), "\n"), nil
}

func nemotronParam(name string, f *jsonNode) []string {
	lines := []string{"<parameter>", "<name>" + name + "</name>"}
	if ty := f.get("type"); ty != nil {
		lines = append(lines, "<type>"+ty.pyStr()+"</type>")
	}
	if d := f.get("description"); d != nil {
		lines = append(lines, "<description>"+strings.TrimSpace(d.str)+"</description>")
	}
	if e := f.get("enum"); e != nil {
		lines = append(lines, "<enum>"+e.dumps()+"</enum>")
	}
	lines = append(lines, xmlExtraKeys(f, "name", "type", "description", "enum")...)
	return append(lines, "</parameter>")
}

// xmlExtraKeys writes the object's other keys as <key>value</key>: objects
// and lists as JSON, scalars as Python's str().
func xmlExtraKeys(obj *jsonNode, handled ...string) []string {
	var lines []string
	for i, k := range obj.keys {
		if slices.Contains(handled, k) {
			continue
		}
		v := obj.vals[i]
		val := v.pyStr()
		if v.kind == '{' || v.kind == '[' {
			val = v.dumps()
		}
		lines = append(lines, "<"+k+">"+val+"</"+k+">")
	}
	return lines
}
