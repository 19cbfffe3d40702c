package chat

import "fmt"

// llama3 is the cookbook's Llama 3 format: BOS, then per message
// "<|start_header_id|>role<|end_header_id|>\n\n" as the header and the
// content, untrimmed, with <|eot_id|> as the output. Unlike Meta's template
// it adds no "Cutting Knowledge Date" system text and has no tool calls.
type llama3 struct{}

func (llama3) bos(e *enc) []int { return []int{e.id("<|begin_of_text|>")} }

func (llama3) message(e *enc, m Message, _ msgCtx) (piece, error) {
	if len(m.ToolCalls) > 0 {
		return piece{}, fmt.Errorf("llama3 has no tool-call format (the cookbook's Llama 3 renderer has none): use a renderer with tool calls, e.g. qwen3")
	}
	text, err := m.ensureText("llama3")
	if err != nil {
		return piece{}, err
	}
	header := e.text("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n")
	return piece{header: header, output: [][]int{e.text(text + "<|eot_id|>")}}, nil
}

func (llama3) stops(e *enc) ([]int, []string) { return []int{e.id("<|eot_id|>")}, nil }

func (llama3) extension() bool { return true }
