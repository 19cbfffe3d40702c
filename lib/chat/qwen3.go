package chat

import (
	"fmt"
	"strings"
)

// qwen3 is the cookbook's Qwen3 renderer (Hugging Face's template with
// enable_thinking): ChatML turns whose header carries the newline that
// follows the previous <|im_end|>; the turn being produced (the last
// message, after a user message) framed "<think>\n…\n</think>\n\n", empty
// when it did not reason; earlier turns' thinking parts dropped; tool
// results as user turns in <tool_response>; tool calls as <tool_call> JSON.
// Content is encoded with special-token spellings as plain text.
// instruct is qwen3_instruct (the 2507 models): no framing, and history
// never changes.
type qwen3 struct {
	frames   bool
	instruct bool
}

// qwen3Off is qwen3_disable_thinking: the prompt ends in an empty think
// block, which tells the model not to reason.
type qwen3Off struct{ qwen3 }

func (qwen3) bos(*enc) []int { return nil }

func (q qwen3) extension() bool { return q.instruct }

func (qwen3) stops(e *enc) ([]int, []string) { return []int{e.id("<|im_end|>")}, nil }

func qwenHeader(m Message, c msgCtx) string {
	role := m.Role
	if role == "tool" {
		role = "user"
	}
	if c.idx > 0 {
		return "\n<|im_start|>" + role + "\n"
	}
	return "<|im_start|>" + role + "\n"
}

// frameThinking is how Qwen3's template writes the produced turn's reasoning.
func frameThinking(r string) string { return "<think>\n" + strings.Trim(r, "\n") + "\n</think>\n\n" }

func (q qwen3) framesTurn(m Message, c msgCtx) bool {
	return q.frames && m.Role == "assistant" && c.lastUser >= 0 && c.isLast
}

func (q qwen3) message(e *enc, m Message, c msgCtx) (piece, error) {
	frames := q.framesTurn(m, c)
	out := q.content(m, c, frames)
	hasText := out != ""
	if frames && !m.hasThinking() {
		out = frameThinking("") + strings.TrimLeft(out, "\n")
	}
	if m.Role == "tool" {
		out = "<tool_response>\n" + out + "\n</tool_response>"
	}
	if len(m.ToolCalls) > 0 {
		calls, err := qwenToolCalls(m.ToolCalls)
		if err != nil {
			return piece{}, err
		}
		if hasText {
			out += "\n"
		}
		out += calls
	}
	return piece{header: e.text(qwenHeader(m, c)), output: [][]int{e.split(out), {e.id("<|im_end|>")}}}, nil
}

// content renders the message body: list content part by part (history's
// thinking dropped), string content as written except that the produced
// turn's inline <think> block is normalized as the template does.
func (q qwen3) content(m Message, c msgCtx, frames bool) string {
	ps := m.parts()
	if ps == nil {
		if frames && strings.Contains(m.Content, "</think>") {
			reasoning, rest, _ := strings.Cut(m.Content, "</think>")
			if i := strings.LastIndex(reasoning, "<think>"); i >= 0 {
				reasoning = reasoning[i+len("<think>"):]
			}
			return frameThinking(reasoning) + strings.TrimLeft(rest, "\n")
		}
		return m.Content
	}
	strip := m.Role == "assistant" && !c.isLast
	var b strings.Builder
	afterBlock := false
	for _, p := range ps {
		switch {
		case p.Type == "thinking" && strip:
		case p.Type == "thinking" && frames:
			b.WriteString(frameThinking(p.Thinking))
			afterBlock = true
		case p.Type == "thinking":
			b.WriteString("<think>" + p.Thinking + "</think>")
			afterBlock = false
		default:
			t := p.Text
			if afterBlock {
				t = strings.TrimLeft(t, "\n")
			}
			b.WriteString(t)
			afterBlock = false
		}
	}
	return b.String()
}

// qwenToolCalls is the calls as Qwen writes them, one
// <tool_call>{"name": …, "arguments": …}</tool_call> per line.
func qwenToolCalls(calls []ToolCall) (string, error) {
	var out []string
	for _, tc := range calls {
		args, err := pyCompact(tc.Function.Arguments)
		if err != nil {
			return "", fmt.Errorf("tool call %s: arguments: %w", tc.Function.Name, err)
		}
		var name strings.Builder
		pyString(&name, tc.Function.Name)
		out = append(out, "<tool_call>\n{\"name\": "+name.String()+", \"arguments\": "+args+"}\n</tool_call>")
	}
	return strings.Join(out, "\n"), nil
}

func (qwen3Off) disablesThinking() bool { return true }

func (q qwen3Off) message(e *enc, m Message, c msgCtx) (piece, error) {
	if m.Role == "assistant" && c.isLast && m.hasContent() && c.lastUser < 0 {
		return piece{}, fmt.Errorf("this conversation has no user message, so Qwen3's template writes no empty think block on the produced turn, " +
			"but the generation prompt always opens one: add a user message, or use the thinking renderer (qwen3)")
	}
	return q.qwen3.message(e, m, c)
}

func (qwen3Off) genSuffix(e *enc, role string, c msgCtx) ([]int, error) {
	nl := ""
	if c.idx > 0 {
		nl = "\n"
	}
	return e.text(nl + "<|im_start|>" + role + "\n<think>\n\n</think>\n\n"), nil
}
