package chat

import (
	"fmt"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/tokenizer"
)

// GptOss renders OpenAI's Harmony format for gpt-oss, as the model's chat
// template does for text conversations. With System set it starts with the
// template's system message (identity, knowledge cutoff, date, reasoning
// effort); without, it starts with the developer/user turns, like the Tinker
// cookbook's gpt_oss_no_sysprompt.
type GptOss struct {
	System          bool
	ReasoningEffort string // low, medium, high
	Date            string // YYYY-MM-DD; "" means today (UTC)
}

func (g *GptOss) name() string {
	if g.System {
		return "gpt_oss"
	}
	return "gpt_oss_no_sysprompt"
}

func (g *GptOss) text(msgs []Message, addGen bool) (string, error) {
	var b strings.Builder
	if g.System {
		date := g.Date
		if date == "" {
			date = time.Now().UTC().Format("2006-01-02")
		}
		b.WriteString("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n" +
			"Knowledge cutoff: 2024-06\nCurrent date: " + date + "\n\nReasoning: " + g.ReasoningEffort + "\n\n" +
			"# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>")
	}
	rest := msgs
	if r := msgs[0].Role; r == "system" || r == "developer" {
		if msgs[0].Content != "" {
			b.WriteString("<|start|>developer<|message|># Instructions\n\n" + msgs[0].Content + "\n\n<|end|>")
		}
		rest = msgs[1:]
	}
	for i, m := range rest {
		switch m.Role {
		case "user":
			b.WriteString("<|start|>user<|message|>" + m.Content + "<|end|>")
		case "assistant":
			if i == len(rest)-1 && !addGen {
				if m.Thinking != "" {
					b.WriteString("<|start|>assistant<|channel|>analysis<|message|>" + m.Thinking + "<|end|>")
				}
				b.WriteString("<|start|>assistant<|channel|>final<|message|>" + m.Content + "<|return|>")
			} else { // earlier reasoning is dropped, as the template does
				b.WriteString("<|start|>assistant<|channel|>final<|message|>" + m.Content + "<|end|>")
			}
		default:
			return "", fmt.Errorf("role %q is not supported here (only a leading system/developer message, then user and assistant)", m.Role)
		}
	}
	if addGen {
		b.WriteString("<|start|>assistant")
	}
	return b.String(), nil
}

func (g *GptOss) stops(tok *tokenizer.Tokenizer) ([]int, []string, error) {
	ids, err := tokenIDs(tok, "<|return|>", "<|call|>")
	return ids, nil, err
}
