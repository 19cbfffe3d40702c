package builtins

import (
	"encoding/json"
	"fmt"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

// toolsBuiltins are the builtins tools.go defines (registryParts lists them).
var toolsBuiltins = []entry{
	{docEntry{
		Name:      "tool_messages",
		Signature: "tool_messages(renderer, tools, system=\"\")",
		Summary:   "The messages that declare tools to a chat renderer (with an optional system prompt), to put before a conversation, as tinker-cookbook's create_conversation_prefix_with_tools.",
		Details: "tools are {\"name\", \"description\", \"parameters\"} dicts (parameters a JSON Schema object), or OpenAI's {\"type\": \"function\", \"function\": {...}}.\n" +
			"Renderers without a tool format (llama3, role_colon) refuse. Assistant messages may carry tool_calls and tool results role \"tool\" with name and tool_call_id.",
		Example: "msgs = tool_messages(\"qwen3\", [{\"name\": \"get_weather\", \"description\": \"Weather for a city\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}], system=\"Be brief.\")\nmsgs[0][\"content\"].startswith(\"Be brief.\\n\\n# Tools\")",
	}, toolMessagesFn},
}

func toolMessagesFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name, system string
	var toolsV *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "renderer", &name, "tools", &toolsV, "system?", &system); err != nil {
		return nil, err
	}
	tools, err := toolsArg(toolsV)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	msgs, err := chat.ToolPrefix(name, tools, system)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	out := make([]starlark.Value, len(msgs))
	for i, m := range msgs {
		d := starlark.NewDict(2)
		_ = d.SetKey(starlark.String("role"), starlark.String(m.Role))
		_ = d.SetKey(starlark.String("content"), starlark.String(m.Content))
		out[i] = d
	}
	return starlark.NewList(out), nil
}

// toolsArg reads tool dicts through JSON, keeping the schemas' key order.
func toolsArg(l *starlark.List) ([]chat.Tool, error) {
	var tools []chat.Tool
	for i := 0; i < l.Len(); i++ {
		j, err := ToJSON(l.Index(i))
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		raw, err := render.MarshalJSON(j)
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		var wrapped struct {
			Function *chat.Tool `json:"function"`
		}
		var t chat.Tool
		if err := json.Unmarshal(raw, &wrapped); err == nil && wrapped.Function != nil {
			t = *wrapped.Function
		} else if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("tools[%d]: want {\"name\", \"description\", \"parameters\"}: %w", i, err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}
