package chat

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Tool declares a function the model may call (the cookbook's ToolSpec,
// OpenAI's function object). Parameters is a JSON Schema object, kept as
// written so its keys stay in order.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// toolPrefixer is a format that declares tools in its system prompt.
type toolPrefixer interface {
	toolPrefix(tools []Tool, system string) ([]Message, error)
}

// ToolPrefix is the cookbook's create_conversation_prefix_with_tools.
func (r renderer) ToolPrefix(tools []Tool, system string) ([]Message, error) {
	return toolPrefix(r.name, r.f, tools, system)
}

// ToolPrefix is the messages that declare tools (and the system prompt)
// for the renderer called name; it needs no tokenizer.
func ToolPrefix(name string, tools []Tool, system string) ([]Message, error) {
	canon, f, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("unknown renderer %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return toolPrefix(canon, f(), tools, system)
}

func toolPrefix(name string, f format, tools []Tool, system string) ([]Message, error) {
	p, ok := f.(toolPrefixer)
	if !ok {
		return nil, fmt.Errorf("renderer %s has no way to declare tools (the cookbook's has none either): use qwen3, deepseekv3 or a gpt_oss renderer", name)
	}
	for i, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tool %d has no name", i)
		}
	}
	msgs, err := p.toolPrefix(tools, system)
	if err != nil {
		return nil, fmt.Errorf("renderer %s: %w", name, err)
	}
	return msgs, nil
}

// params is a tool's parameters schema as JSON text ("{}" when absent).
func (t Tool) params() string {
	if len(t.Parameters) == 0 {
		return "{}"
	}
	return string(t.Parameters)
}

// qwenTools is Qwen3's "# Tools" system text: each tool as
// {"type": "function", "function": TOOL} on its own line.
func qwenTools(tools []Tool, system string) ([]Message, error) {
	text := ""
	if len(tools) > 0 {
		var lines []string
		for _, t := range tools {
			fn, err := t.pyJSON()
			if err != nil {
				return nil, err
			}
			lines = append(lines, `{"type": "function", "function": `+fn+`}`)
		}
		text = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
			"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
			strings.Join(lines, "\n") + "\n</tools>\n\n" +
			"For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
			"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
	}
	if system != "" {
		text = system + "\n\n" + text
	}
	return []Message{{Role: "system", Content: text}}, nil
}

func (qwen3) toolPrefix(tools []Tool, system string) ([]Message, error) {
	return qwenTools(tools, system)
}

func (q qwenVL) toolPrefix(tools []Tool, system string) ([]Message, error) {
	if q.v == 0 {
		return qwenTools(tools, system)
	}
	return qwen35Tools(tools, system)
}

// qwen35Tools is Qwen3.5's tool section (also Qwen3.8's): each tool's JSON
// on a line, the XML call format, the tools before the system prompt.
func qwen35Tools(tools []Tool, system string) ([]Message, error) {
	if len(tools) == 0 {
		return []Message{{Role: "system", Content: system}}, nil
	}
	var lines []string
	for _, t := range tools {
		line, err := t.pyJSON()
		if err != nil {
			return nil, err
		}
		lines = append(lines, line)
	}
	text := "# Tools\n\nYou have access to the following functions:\n\n<tools>\n" + strings.Join(lines, "\n") + "\n</tools>\n\n" +
		"If you choose to call a function ONLY reply in the following format with NO suffix:\n\n" +
		"<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n" +
		"<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n" +
		"</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n" +
		"- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n" +
		"- Required parameters MUST be specified\n" +
		"- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n" +
		"- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n" +
		"</IMPORTANT>"
	if system != "" {
		text += "\n\n" + system
	}
	return []Message{{Role: "system", Content: text}}, nil
}

// pyJSON is json.dumps of the tool as a {name, description, parameters}
// dict.
func (t Tool) pyJSON() (string, error) {
	var name, desc strings.Builder
	pyString(&name, t.Name)
	pyString(&desc, t.Description)
	params, err := pyCompact(t.params())
	if err != nil {
		return "", fmt.Errorf("tool %s: parameters: %w", t.Name, err)
	}
	return `{"name": ` + name.String() + `, "description": ` + desc.String() + `, "parameters": ` + params + `}`, nil
}

// dsTools is DeepSeek V3.1's tool section, appended to the system prompt.
func dsTools(tools []Tool, system string) ([]Message, error) {
	text := ""
	if len(tools) > 0 {
		var blocks []string
		for _, t := range tools {
			params, err := pyCompact(t.params())
			if err != nil {
				return nil, fmt.Errorf("tool %s: parameters: %w", t.Name, err)
			}
			blocks = append(blocks, "### "+t.Name+"\nDescription: "+t.Description+"\n\nParameters: "+params)
		}
		text = "\n\n## Tools\nYou have access to the following tools:\n\n" + strings.Join(blocks, "\n") +
			"\n\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n" +
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments<｜tool▁call▁end｜><｜tool▁calls▁end｜>\n\n" +
			"Where:\n- `tool_call_name` must be an exact match to one of the available tools\n" +
			"- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n" +
			"- For multiple tool calls, chain them directly without separators or spaces"
	}
	return []Message{{Role: "system", Content: system + text}}, nil
}

func (deepseekOff) toolPrefix(tools []Tool, system string) ([]Message, error) {
	return dsTools(tools, system)
}

func (deepseekThinking) toolPrefix(tools []Tool, system string) ([]Message, error) {
	return dsTools(tools, system)
}
