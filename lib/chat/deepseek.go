package chat

import (
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/lazyre"
)

// The cookbook's DeepSeek V3.1 renderers: BOS; a leading system message
// as bare text; <｜User｜> and <｜Assistant｜> as single-token headers
// (the assistant's followed by "</think>" when not thinking, and on
// history when thinking); an assistant turn closed by end-of-sentence only
// when it has content; tool results in <｜tool▁output▁begin｜>…end, after
// which the assistant continues without a header.
const (
	dsBOS = "<｜begin▁of▁sentence｜>"
	dsEOS = "<｜end▁of▁sentence｜>"
)

// deepseekOff is deepseekv3 (= deepseekv3_disable_thinking): reasoning is
// removed from assistant turns, whose header ends "</think>".
type deepseekOff struct{}

// deepseekThinking is deepseekv3_thinking: the prompt ends "<think>";
// history keeps no reasoning (its header ends "</think>"); the last turn
// keeps its reasoning, or gets an empty "<think></think>".
type deepseekThinking struct{}

func (deepseekOff) bos(e *enc) []int      { return []int{e.id(dsBOS)} }
func (deepseekThinking) bos(e *enc) []int { return []int{e.id(dsBOS)} }

func (deepseekOff) stops(e *enc) ([]int, []string)      { return []int{e.id(dsEOS)}, nil }
func (deepseekThinking) stops(e *enc) ([]int, []string) { return []int{e.id(dsEOS)}, nil }

func (deepseekOff) extension() bool { return true }

var dsThinkBlock = lazyre.New(`(?s)<think>.*?</think>`)

func followsTool(c msgCtx) bool { return c.prev != nil && c.prev.Role == "tool" }

func (deepseekOff) message(e *enc, m Message, c msgCtx) (piece, error) {
	turn := m.Role == "assistant" && !followsTool(c)
	if turn {
		text, _ := m.textAndThinking()
		if m.parts() == nil {
			text = dsThinkBlock.ReplaceAllString(m.Content, "")
		}
		m.Content, m.Parts, m.Thinking = text, nil, ""
	}
	p, err := dsMessage(e, m, c)
	if turn {
		p.header = append(p.header, e.text("</think>")...)
	}
	return p, err
}

func (deepseekThinking) message(e *enc, m Message, c msgCtx) (piece, error) {
	p, err := dsMessage(e, m, c)
	if err != nil || m.Role != "assistant" || followsTool(c) {
		return p, err
	}
	switch {
	case !c.isLast:
		p.header = append(p.header, e.text("</think>")...)
	case m.hasContent() && !m.hasThinking():
		p.output[0] = append(e.text("<think></think>"), p.output[0]...)
	}
	return p, nil
}

func (deepseekThinking) prefill(msgs []Message) string {
	if len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
		return "" // tool use stays in non-thinking mode
	}
	return "<think>"
}

// dsMessage is the shared rendering of one message: header, body, tool
// calls, and end-of-sentence after an assistant turn with content.
func dsMessage(e *enc, m Message, c msgCtx) (piece, error) {
	header, out, err := dsParts(e, m, c)
	if err != nil {
		return piece{}, err
	}
	toks := e.text(out + dsToolCalls(m.ToolCalls))
	if m.Role == "assistant" && m.hasContent() {
		toks = append(toks, e.id(dsEOS))
	}
	return piece{header: header, output: [][]int{toks}}, nil
}

// dsParts is a message's header and text. History's reasoning is dropped
// from assistant turns that make no tool call.
func dsParts(e *enc, m Message, c msgCtx) ([]int, string, error) {
	if m.Role == "assistant" {
		drop := len(m.ToolCalls) == 0 && !c.isLast
		out := m.joined(func(t string) string {
			if drop {
				return ""
			}
			return "<think>" + t + "</think>"
		})
		if followsTool(c) {
			return nil, out, nil
		}
		return []int{e.id("<｜Assistant｜>")}, out, nil
	}
	t, err := m.ensureText("deepseek")
	if err != nil {
		return nil, "", err
	}
	switch {
	case m.Role == "system" && c.idx == 0:
		return nil, t, nil
	case m.Role == "system":
		return nil, "", fmt.Errorf("DeepSeek takes a system message only first: merge it into the first one or make it a user message")
	case m.Role == "user":
		return []int{e.id("<｜User｜>")}, t, nil
	case m.Role == "tool":
		return e.text("<｜tool▁output▁begin｜>"), t + "<｜tool▁output▁end｜>", nil
	}
	return nil, "", fmt.Errorf("role %q is not one DeepSeek renders (system, user, assistant, tool)", m.Role)
}

func dsToolCalls(calls []ToolCall) string {
	if len(calls) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<｜tool▁calls▁begin｜>")
	for _, tc := range calls {
		b.WriteString("<｜tool▁call▁begin｜>" + tc.Function.Name + "<｜tool▁sep｜>" + tc.Function.Arguments + "<｜tool▁call▁end｜>")
	}
	b.WriteString("<｜tool▁calls▁end｜>")
	return b.String()
}
