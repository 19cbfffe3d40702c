package chat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tinkershell/tinker/lib/lazy"
)

// qwenVL is the cookbook's Qwen3-VL renderer and its descendants for text
// (images are refused when messages are read): each message's output is
// one string (text, tool calls and <|im_end|>) encoded as is. Qwen3-VL
// writes thinking parts "<think>…</think>" and drops them from history; a
// tool call always follows a newline; nothing is framed.
//
// The Qwen3.5/3.6 family (v35) strips string content, frames every
// assistant turn after the last user message (an empty
// "<think>\n\n</think>\n\n" in its header when it did not reason), writes
// tool calls as <function=…><parameter=…> XML, keeps one user block open
// across consecutive tool results, and ends the prompt with "<think>\n"
// (gen; the empty block when thinking is off). Qwen3.8 (v38) keeps every
// turn's thinking, frames every turn, writes non-string arguments as JSON,
// and puts a reasoning-effort instruction into the system message.
type qwenVL struct {
	v      int    // 0 (Qwen3-VL), 35 (Qwen3.5/3.6), 38 (Qwen3.8)
	gen    string // what the generation prompt adds after the header (v35, v38)
	off    bool   // the prompt tells the model not to reason
	effort string // Qwen3.8's reasoning effort: xhigh, medium, low
}

const qwenEmptyThink = "<think>\n\n</think>\n\n"

func (qwenVL) bos(*enc) []int { return nil }

func (qwenVL) stops(e *enc) ([]int, []string) { return []int{e.id("<|im_end|>")}, nil }

func (q qwenVL) disablesThinking() bool { return q.off }

func (q qwenVL) message(e *enc, m Message, c msgCtx) (piece, error) {
	if q.v >= 35 && m.parts() == nil {
		m.Content = strings.TrimSpace(m.Content)
	}
	tool := m.Role == "tool"
	group := q.v >= 35
	header := qwenHeader(m, c)
	switch {
	case tool && group && c.prev != nil && c.prev.Role == "tool":
		header = "\n" // the open user block continues
	case m.Role == "assistant":
		header += q.headerSuffix(m, c)
	}
	out, err := q.body(m, c)
	if err != nil {
		return piece{}, err
	}
	if !(tool && group && c.next != nil && c.next.Role == "tool") {
		out += "<|im_end|>"
	}
	p := piece{header: e.text(header), output: [][]int{e.text(out)}}
	// The produced turn's header, up to what the prompt already wrote,
	// stays the header; the rest of it is output.
	if prefix := q.promptInHeader(m, c); prefix != "" && strings.HasPrefix(header, prefix) {
		p.header = e.text(prefix)
		if rest := header[len(prefix):]; rest != "" {
			p.output = append([][]int{e.text(rest)}, p.output...)
		}
	}
	return p, nil
}

// body is the content, the tool-response wrapping and the tool calls.
func (q qwenVL) body(m Message, c msgCtx) (string, error) {
	frame := func(t string) string { return "<think>" + t + "</think>" }
	if q.v >= 35 {
		frame = func(t string) string { return "<think>\n" + t + "\n</think>\n\n" }
	}
	strip := m.Role == "assistant" && !c.isLast && q.v != 38
	out := qwenBody(m, strip, frame, "\n</tool_response>")
	if len(m.ToolCalls) == 0 {
		return out, nil
	}
	if q.v == 0 {
		calls, err := qwenToolCalls(m.ToolCalls)
		return out + "\n" + calls, err
	}
	calls, err := q.xmlToolCalls(m.ToolCalls)
	if err != nil {
		return "", err
	}
	if text, _ := m.textAndThinking(); strings.TrimSpace(text) != "" {
		out += "\n\n"
	}
	return out + calls, nil
}

// qwenBody is a message's content with its thinking parts written by
// frame (dropped when strip), a tool result wrapped in <tool_response>
// closed by toolEnd.
func qwenBody(m Message, strip bool, frame func(string) string, toolEnd string) string {
	out := m.joined(func(t string) string {
		if strip {
			return ""
		}
		return frame(t)
	})
	if m.Role == "tool" {
		out = "<tool_response>\n" + out + toolEnd
	}
	return out
}

func (q qwenVL) headerSuffix(m Message, c msgCtx) string {
	switch {
	case q.v == 35 && (c.idx <= c.lastUser || m.hasThinking()):
		return ""
	case q.v == 38 && listThinking(m):
		return ""
	case q.v == 0:
		return ""
	}
	return qwenEmptyThink
}

func listThinking(m Message) bool { return m.parts() != nil && m.hasThinking() }

func (q qwenVL) promptInHeader(m Message, c msgCtx) string {
	if q.v == 0 || m.Role != "assistant" || !c.isLast {
		return ""
	}
	return q.genText(c)
}

func (q qwenVL) genText(c msgCtx) string {
	nl := ""
	if c.idx > 0 {
		nl = "\n"
	}
	return nl + "<|im_start|>assistant\n" + q.gen
}

func (q qwenVL) genSuffix(e *enc, _ string, c msgCtx) ([]int, error) {
	return e.text(q.genText(c)), nil
}

// xmlToolCalls is Qwen3.5's call format, one block per call.
func (q qwenVL) xmlToolCalls(calls []ToolCall) (string, error) {
	var blocks []string
	for _, tc := range calls {
		args := tc.Function.Arguments
		if args == "" {
			args = "{}"
		}
		tree, err := parseJSONTree(args)
		if err != nil || tree.kind != '{' {
			return "", fmt.Errorf("tool call %s: arguments must be a JSON object", tc.Function.Name)
		}
		lines := []string{"<tool_call>\n<function=" + tc.Function.Name + ">"}
		for i, k := range tree.keys {
			lines = append(lines, "<parameter="+k+">\n"+q.argText(tree.vals[i])+"\n</parameter>")
		}
		blocks = append(blocks, strings.Join(append(lines, "</function>\n</tool_call>"), "\n"))
	}
	return strings.Join(blocks, "\n"), nil
}

// argText is one argument as the template writes it: strings as they
// are; objects and lists as JSON; other scalars as Python's str() in
// Qwen3.5 (True, None) and as JSON in Qwen3.8.
func (q qwenVL) argText(v *jsonNode) string {
	switch {
	case v.kind == '"':
		return v.str
	case v.kind == '{' || v.kind == '[' || q.v == 38:
		return v.dumps()
	case v.kind == 'b':
		return map[string]string{"true": "True", "false": "False"}[v.str]
	case v.kind == 'z':
		return "None"
	}
	return v.dumps()
}

// qwen38Effort is the instruction Qwen3.8's template puts first in the
// system message for each reasoning effort (none for medium).
var qwen38Effort = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"xhigh": "Reasoning effort is set to xhigh. Please think carefully through the task, validate key assumptions, " +
			"consider plausible alternatives, and prioritize correctness, consistency, and clarity in the final answer.",
		"medium": "",
		"low":    "Reasoning effort is set to low. Keep your thinking brief and focused, moving directly to the conclusion without unnecessary elaboration.",
	}
}}

// frame is Qwen3.8's system message: the effort instruction first (a
// system message of its own when there is none), an empty one dropped.
func (q qwenVL) frame(msgs []Message) []Message {
	if q.v != 38 {
		return msgs
	}
	instr := ""
	if !q.off {
		instr = qwen38Effort.Get()[q.effort]
	}
	if len(msgs) == 0 || msgs[0].Role != "system" {
		if instr == "" {
			return msgs
		}
		sys := Message{Role: "system", Content: instr}
		if slices.ContainsFunc(msgs, func(m Message) bool { return m.Trainable != nil }) {
			no := false
			sys.Trainable = &no
		}
		return append([]Message{sys}, msgs...)
	}
	first := msgs[0]
	text, _ := first.textAndThinking()
	text = strings.TrimSpace(text)
	if text == "" && instr == "" {
		return msgs[1:]
	}
	if instr != "" && text != instr && !strings.HasPrefix(text, instr+"\n\n") {
		if text == "" {
			text = instr
		} else {
			text = instr + "\n\n" + text
		}
	}
	first.Content, first.Parts, first.Thinking = text, nil, ""
	return append([]Message{first}, msgs[1:]...)
}
