package chat

import (
	"fmt"
	"strings"
	"time"
)

// GptOss renders OpenAI's Harmony format as the cookbook's gpt_oss
// renderers do. With System set, the conversation is preceded by the
// model's system message (identity, knowledge cutoff, date, reasoning
// effort); without, it is gpt_oss_no_sysprompt. A user system message
// becomes a developer message under "# Instructions"; every assistant
// turn keeps its reasoning (analysis channel), history included; tool
// calls go to the commentary channel, results come from functions.NAME.
type GptOss struct {
	System          bool
	ReasoningEffort string // low, medium, high
	Date            string // YYYY-MM-DD; "" means today (local time, as the cookbook's datetime.now())
}

// gptOssSystemRole is the role of the system message the renderer writes
// itself (a user's "system" becomes "developer").
const gptOssSystemRole = "_gptoss_internal_system"

func (*GptOss) bos(*enc) []int { return nil }

func (*GptOss) stops(e *enc) ([]int, []string) {
	return []int{e.id("<|return|>"), e.id("<|call|>")}, nil
}

func (g *GptOss) frame(msgs []Message) []Message {
	if !g.System {
		return msgs
	}
	date := g.Date
	if date == "" {
		date = time.Now().Format("2006-01-02")
	}
	sys := Message{Role: gptOssSystemRole, Content: "You are ChatGPT, a large language model trained by OpenAI.\n" +
		"Knowledge cutoff: 2024-06\nCurrent date: " + date + "\n\nReasoning: " + g.ReasoningEffort + "\n\n" +
		"# Valid channels: analysis, commentary, final. Channel must be included for every message."}
	return append([]Message{sys}, msgs...)
}

func (g *GptOss) message(e *enc, m Message, c msgCtx) (piece, error) {
	if m.Role == "tool" {
		return gptOssToolResult(e, m)
	}
	role := m.Role
	switch role {
	case gptOssSystemRole:
		role = "system"
	case "system":
		role = "developer"
	}
	var out string
	switch m.Role {
	case "assistant":
		out = gptOssAssistant(m, c)
	case "system":
		t, err := m.ensureText("gpt_oss")
		if err != nil {
			return piece{}, err
		}
		out = "<|message|># Instructions\n\n" + t + "\n\n<|end|>"
	default:
		t, err := m.ensureText("gpt_oss")
		if err != nil {
			return piece{}, err
		}
		out = "<|message|>" + t + "<|end|>"
	}
	return piece{header: e.text("<|start|>" + role), output: [][]int{e.text(out)}}, nil
}

// gptOssAssistant is an assistant turn after its "<|start|>assistant"
// header: analysis (reasoning), then the tool calls (with any text as a
// commentary preamble) or the final answer.
func gptOssAssistant(m Message, c msgCtx) string {
	text, thinking := m.textAndThinking()
	var b strings.Builder
	if thinking != "" {
		b.WriteString("<|channel|>analysis<|message|>" + thinking + "<|end|><|start|>assistant")
	}
	if len(m.ToolCalls) > 0 {
		if text != "" {
			b.WriteString("<|channel|>commentary<|message|>" + text + "<|end|><|start|>assistant")
		}
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b.WriteString("<|start|>assistant")
			}
			b.WriteString(" to=functions." + tc.Function.Name + "<|channel|>commentary <|constrain|>json<|message|>" + tc.Function.Arguments + "<|call|>")
		}
		return b.String()
	}
	b.WriteString("<|channel|>final<|message|>" + text)
	if c.isLast {
		b.WriteString("<|return|>")
	} else {
		b.WriteString("<|end|>")
	}
	return b.String()
}

// gptOssToolResult is a tool's answer: from functions.NAME to the
// assistant, on the commentary channel. Harmony names the function, so a
// result without "name" is refused rather than written as
// functions.unknown (the cookbook warns and writes that).
func gptOssToolResult(e *enc, m Message) (piece, error) {
	if m.Name == "" {
		return piece{}, fmt.Errorf("gpt_oss: a tool message needs \"name\" (the function that was called): Harmony writes results as coming from functions.NAME")
	}
	t, err := m.ensureText("gpt_oss")
	if err != nil {
		return piece{}, err
	}
	name := m.Name
	if !strings.HasPrefix(name, "functions.") {
		name = "functions." + name
	}
	return piece{header: e.text("<|start|>" + name + " to=assistant"),
		output: [][]int{e.text("<|channel|>commentary<|message|>" + t + "<|end|>")}}, nil
}
