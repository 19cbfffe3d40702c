package chat

// qwen3VL is the cookbook's Qwen3-VL renderer for text (images are refused
// when messages are read): like qwen3 but nothing is framed, thinking parts
// are written "<think>…</think>" (dropped from history), a tool call always
// follows a newline, and each message's output is one string encoded as is.
// frames is unused by the text rendering: qwen3_vl and qwen3_vl_instruct
// render text the same, as in the cookbook.
type qwen3VL struct{ frames bool }

func (qwen3VL) bos(*enc) []int { return nil }

func (qwen3VL) stops(e *enc) ([]int, []string) { return []int{e.id("<|im_end|>")}, nil }

func (qwen3VL) message(e *enc, m Message, c msgCtx) (piece, error) {
	strip := m.Role == "assistant" && !c.isLast
	out := m.joined(func(t string) string {
		if strip {
			return ""
		}
		return "<think>" + t + "</think>"
	})
	if m.Role == "tool" {
		out = "<tool_response>\n" + out + "\n</tool_response>"
	}
	if len(m.ToolCalls) > 0 {
		calls, err := qwenToolCalls(m.ToolCalls)
		if err != nil {
			return piece{}, err
		}
		out += "\n" + calls
	}
	return piece{header: e.text(qwenHeader(m, c)), output: [][]int{e.text(out + "<|im_end|>")}}, nil
}
