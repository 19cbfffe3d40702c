package chat

import (
	"fmt"
	"strconv"
	"strings"
)

// kimi is the cookbook's Kimi K2 renderer and its K2.5/K2.6 successors,
// for text: "<|im_ROLE|>role<|im_middle|>content<|im_end|>" with no
// separators; the default system prompt when none is given; each assistant
// turn "<think>…</think>" (empty for history before the last assistant
// message that made no tool call, unless preserve), then the text and the
// tool-calls section. K2.5+ prompts end "<think>" (or "<think></think>"
// with thinking off). Tool results are system turns named after the tool,
// "## Return of ID".
//
// Kimi's tokenizer is a tiktoken vocabulary (lib/tokenizer loads it) that
// no registry here ships: the tests render on a synthetic byte vocabulary
// with Kimi's special tokens.
type kimi struct {
	k25      bool   // K2.5 and K2.6
	think    string // after the generation header: "<think>" or "<think></think>" (K2.5+)
	preserve bool   // keep history's reasoning (kimi_k26_preserve_thinking)
}

const kimiDefaultSystem = "You are Kimi, an AI assistant created by Moonshot AI."

func (kimi) bos(*enc) []int { return nil }

func (kimi) stops(e *enc) ([]int, []string) { return []int{e.id("<|im_end|>")}, nil }

func (k kimi) disablesThinking() bool { return k.think == "<think></think>" }

func (k kimi) prefill([]Message) string { return k.think }

// frame adds the default system message (after a leading tool_declare).
func (kimi) frame(msgs []Message) []Message {
	sys := Message{Role: "system", Content: kimiDefaultSystem}
	switch {
	case len(msgs) == 0:
		return []Message{sys}
	case msgs[0].Role == "tool_declare":
		if len(msgs) >= 2 && msgs[1].Role == "system" {
			return msgs
		}
		return append([]Message{msgs[0], sys}, msgs[1:]...)
	case msgs[0].Role != "system":
		return append([]Message{sys}, msgs...)
	}
	return msgs
}

// turnStart: Kimi's produced turn starts after the last assistant message
// that called no tool.
func (kimi) turnStart(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "assistant" && len(msgs[i].ToolCalls) == 0 {
			return i + 1
		}
	}
	return 0
}

func (k kimi) message(e *enc, m Message, c msgCtx) (piece, error) {
	header, err := kimiHeader(m)
	if err != nil {
		return piece{}, err
	}
	p := piece{header: e.text(header)}
	if m.Role == "assistant" {
		p.output = [][]int{e.text(k.assistant(m, c))}
		return p, nil
	}
	ps := m.parts()
	switch {
	case ps == nil:
		p.output = [][]int{e.text(m.Content + "<|im_end|>")}
	case len(ps) == 1 && ps[0].Type == "text":
		p.output = [][]int{e.text(ps[0].Text + "<|im_end|>")}
	case !k.k25 || m.hasThinking():
		return piece{}, errTextOnly("kimi", m)
	default: // K2.5 encodes each text part on its own
		for _, part := range ps {
			p.output = append(p.output, e.text(part.Text))
		}
		p.output = append(p.output, e.text("<|im_end|>"))
	}
	return p, nil
}

func kimiHeader(m Message) (string, error) {
	switch m.Role {
	case "user":
		return "<|im_user|>user<|im_middle|>", nil
	case "assistant":
		return "<|im_assistant|>assistant<|im_middle|>", nil
	case "tool":
		if m.Name == "" || m.ToolCallID == "" {
			return "", fmt.Errorf("kimi: a tool message needs \"name\" and \"tool_call_id\" (Kimi writes results as \"## Return of ID\" under the tool's name)")
		}
		return "<|im_system|>" + m.Name + "<|im_middle|>## Return of " + m.ToolCallID + "\n", nil
	}
	return "<|im_system|>" + m.Role + "<|im_middle|>", nil
}

func (k kimi) assistant(m Message, c msgCtx) string {
	text, thinking := m.textAndThinking()
	out := "<think></think>"
	if (c.inLastTurn || k.preserve) && thinking != "" {
		out = "<think>" + thinking + "</think>"
	}
	out += text
	if len(m.ToolCalls) > 0 {
		out += "<|tool_calls_section_begin|>"
		for i, tc := range m.ToolCalls {
			id := tc.ID
			if id == "" {
				id = "functions." + tc.Function.Name + ":" + strconv.Itoa(i)
			}
			out += "<|tool_call_begin|>" + id + "<|tool_call_argument_begin|>" + tc.Function.Arguments + "<|tool_call_end|>"
		}
		out += "<|tool_calls_section_end|>"
	}
	return out + "<|im_end|>"
}

// toolPrefix is K2's tool_declare message (the OpenAI tool list as
// compact JSON with sorted keys) or K2.5's TypeScript declarations, then
// the system prompt (Kimi's default when none is given).
func (k kimi) toolPrefix(tools []Tool, system string) ([]Message, error) {
	if system == "" {
		system = kimiDefaultSystem
	}
	if len(tools) == 0 {
		return []Message{{Role: "system", Content: system}}, nil
	}
	if k.k25 {
		ts, err := kimiToolsTS(tools)
		if err != nil {
			return nil, err
		}
		return []Message{{Role: "tool_declare", Content: ts}, {Role: "system", Content: system}}, nil
	}
	var items []string
	for _, t := range tools {
		fn, err := t.pyJSON()
		if err != nil {
			return nil, err
		}
		items = append(items, `{"type": "function", "function": `+fn+`}`)
	}
	tree, err := parseJSONTree("[" + strings.Join(items, ",") + "]")
	if err != nil {
		return nil, err
	}
	return []Message{{Role: "tool_declare", Content: tree.sortedCompact()}, {Role: "system", Content: system}}, nil
}

// examples is Kimi's build_supervised_examples: the last turn as one
// example, or one example per user turn (each trained on its last turn
// for all_assistant_messages, else on the rule as given).
func (kimi) examples(r renderer, msgs []Message, trainOn string) ([]Training, error) {
	if trainOn == TrainLastAssistant || trainOn == TrainLastAssistantTurn {
		t, err := r.RenderForTraining(msgs, trainOn)
		return []Training{t}, err
	}
	var cuts []int
	for i, m := range msgs {
		if m.Role == "user" {
			cuts = append(cuts, i)
		}
	}
	if len(cuts) > 0 {
		cuts = cuts[1:]
	}
	rule := trainOn
	if trainOn == TrainAllAssistant {
		rule = TrainLastAssistantTurn
	}
	var out []Training
	for _, cut := range append(cuts, len(msgs)) {
		t, err := r.RenderForTraining(msgs[:cut], rule)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
