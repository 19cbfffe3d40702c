package chat

import (
	"strings"

	"github.com/tinkershell/tinker/lib/tokenizer"
)

// qwen3 follows Qwen3's chat template for text conversations: ChatML turns;
// assistant reasoning kept only after the last user query; with thinking
// disabled, the generation prompt carries an empty <think></think> block.
type qwen3 struct{ thinking bool }

func (q qwen3) name() string {
	if q.thinking {
		return "qwen3"
	}
	return "qwen3_disable_thinking"
}

func isToolResponse(s string) bool {
	return strings.HasPrefix(s, "<tool_response>") && strings.HasSuffix(s, "</tool_response>")
}

func (q qwen3) text(msgs []Message, addGen bool) (string, error) {
	var b strings.Builder
	if msgs[0].Role == "system" {
		b.WriteString("<|im_start|>system\n" + msgs[0].Content + "<|im_end|>\n")
	}
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && !isToolResponse(msgs[i].Content) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0):
			b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
		case m.Role == "assistant":
			content, reasoning := m.Content, m.Thinking
			if reasoning == "" && strings.Contains(content, "</think>") {
				parts := strings.Split(content, "</think>")
				content = strings.TrimLeft(parts[len(parts)-1], "\n")
				before := strings.TrimRight(parts[0], "\n")
				think := strings.Split(before, "<think>")
				reasoning = strings.TrimLeft(think[len(think)-1], "\n")
			}
			if i > lastQuery && (i == len(msgs)-1 || reasoning != "") {
				b.WriteString("<|im_start|>assistant\n<think>\n" + strings.Trim(reasoning, "\n") + "\n</think>\n\n" + strings.TrimLeft(content, "\n"))
			} else {
				b.WriteString("<|im_start|>assistant\n" + content)
			}
			b.WriteString("<|im_end|>\n")
		case m.Role == "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				b.WriteString("<|im_start|>user")
			}
			b.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				b.WriteString("<|im_end|>\n")
			}
		}
	}
	if addGen {
		b.WriteString("<|im_start|>assistant\n")
		if !q.thinking {
			b.WriteString("<think>\n\n</think>\n\n")
		}
	}
	return b.String(), nil
}

func (qwen3) stops(tok *tokenizer.Tokenizer) ([]int, []string, error) {
	ids, err := tokenIDs(tok, "<|im_end|>")
	return ids, nil, err
}
