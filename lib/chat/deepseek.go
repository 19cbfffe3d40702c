package chat

import (
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/tokenizer"
)

// deepseekV3 follows DeepSeek V3's chat template: BOS and all system
// prompts first, then <｜User｜>/<｜Assistant｜> turns, each assistant turn
// closed by the end-of-sentence token; tool outputs in their own block.
type deepseekV3 struct{}

const (
	dsBOS = "<｜begin▁of▁sentence｜>"
	dsEOS = "<｜end▁of▁sentence｜>"
)

func (deepseekV3) name() string { return "deepseekv3" }

// dsPrefix is how both DeepSeek templates open: BOS, then every system
// message joined by blank lines, wherever they stand in the conversation.
func dsPrefix(msgs []Message) string {
	var sys []string
	for _, m := range msgs {
		if m.Role == "system" {
			sys = append(sys, m.Content)
		}
	}
	return dsBOS + strings.Join(sys, "\n\n")
}

func (deepseekV3) text(msgs []Message, addGen bool) (string, error) {
	var b strings.Builder
	b.WriteString(dsPrefix(msgs))
	inTool, firstOutput := false, true
	for _, m := range msgs {
		switch m.Role {
		case "system":
		case "user":
			inTool = false
			b.WriteString("<｜User｜>" + m.Content)
		case "assistant":
			if inTool {
				b.WriteString("<｜tool▁outputs▁end｜>" + m.Content + dsEOS)
				inTool = false
			} else {
				b.WriteString("<｜Assistant｜>" + m.Content + dsEOS)
			}
		case "tool":
			inTool = true
			if firstOutput { // the template never resets this flag
				b.WriteString("<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>" + m.Content + "<｜tool▁output▁end｜>")
				firstOutput = false
			} else {
				b.WriteString("\n<｜tool▁output▁begin｜>" + m.Content + "<｜tool▁output▁end｜>")
			}
		default:
			return "", fmt.Errorf("role %q is not supported", m.Role)
		}
	}
	if inTool {
		b.WriteString("<｜tool▁outputs▁end｜>")
	}
	if addGen && !inTool {
		b.WriteString("<｜Assistant｜>")
	}
	return b.String(), nil
}

func (deepseekV3) stops(tok *tokenizer.Tokenizer) ([]int, []string, error) {
	ids, err := tokenIDs(tok, dsEOS)
	return ids, nil, err
}

// deepseekV31 follows DeepSeek V3.1's chat template (text and tool
// outputs): the assistant header carries "</think>" (non-thinking mode, the
// template's default) or "<think>" (thinking mode) when it follows a user
// turn; earlier reasoning (text before "</think>") is dropped from history.
type deepseekV31 struct{ thinking bool }

func (d deepseekV31) name() string {
	if d.thinking {
		return "deepseekv3_1_thinking"
	}
	return "deepseekv3_1"
}

func (d deepseekV31) text(msgs []Message, addGen bool) (string, error) {
	var b strings.Builder
	b.WriteString(dsPrefix(msgs))
	lastUser, inTool := false, false
	for _, m := range msgs {
		switch m.Role {
		case "system":
		case "user":
			inTool, lastUser = false, true
			b.WriteString("<｜User｜>" + m.Content)
		case "assistant":
			if lastUser {
				// The template opens "<think>" only for prefix messages in
				// thinking mode; a finished turn always gets "</think>".
				b.WriteString("<｜Assistant｜></think>")
			}
			lastUser = false
			content := m.Content
			if inTool {
				inTool = false
			} else if _, after, ok := strings.Cut(content, "</think>"); ok {
				content = after
			}
			b.WriteString(content + dsEOS)
		case "tool":
			lastUser, inTool = false, true
			b.WriteString("<｜tool▁output▁begin｜>" + m.Content + "<｜tool▁output▁end｜>")
		default:
			return "", fmt.Errorf("role %q is not supported", m.Role)
		}
	}
	if addGen && lastUser && !inTool {
		if d.thinking {
			b.WriteString("<｜Assistant｜><think>")
		} else {
			b.WriteString("<｜Assistant｜></think>")
		}
	}
	return b.String(), nil
}

func (deepseekV31) stops(tok *tokenizer.Tokenizer) ([]int, []string, error) {
	ids, err := tokenIDs(tok, dsEOS)
	return ids, nil, err
}
