package chat

import (
	"encoding/json"
	"strings"
	"testing"
)

var weatherTool = Tool{Name: "get_weather", Description: "Get the weather",
	Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"], "default": "c"}}, "required": ["city"]}`)}

func TestToolPrefixQwen3(t *testing.T) {
	r, _ := New("qwen3", loadTok(t, "qwen3"))
	msgs, err := r.ToolPrefix([]Tool{weatherTool}, "Sys")
	if err != nil {
		t.Fatal(err)
	}
	want := "Sys\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
		`{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"], "default": "c"}}, "required": ["city"]}}}` +
		"\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
		"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
	if len(msgs) != 1 || msgs[0].Role != "system" || msgs[0].Content != want {
		t.Fatalf("got %+v\nwant %q", msgs, want)
	}
	if none, _ := r.ToolPrefix(nil, ""); len(none) != 1 || none[0].Content != "" {
		t.Fatalf("no tools, no system: %+v", none)
	}
}

func TestToolPrefixDeepSeek(t *testing.T) {
	r, _ := New("deepseekv3", loadTok(t, "deepseek_v3"))
	msgs, err := r.ToolPrefix([]Tool{weatherTool}, "Sys")
	if err != nil {
		t.Fatal(err)
	}
	c := msgs[0].Content
	if !strings.HasPrefix(c, "Sys\n\n## Tools\nYou have access to the following tools:\n\n### get_weather\nDescription: Get the weather\n\nParameters: {\"type\": \"object\", ") ||
		!strings.HasSuffix(c, "- For multiple tool calls, chain them directly without separators or spaces") {
		t.Fatalf("deepseek tools: %q", c)
	}
}

func TestToolPrefixGptOss(t *testing.T) {
	r, _ := New("gpt_oss_no_sysprompt", loadTok(t, "gptoss"))
	tool := Tool{Name: "search", Description: "Search the web",
		Parameters: json.RawMessage(`{"type": "object", "description": "Query options", "properties": {
			"q": {"type": "string", "title": "Query", "description": "What to look for", "examples": ["go", "Ünï"]},
			"n": {"type": "integer", "default": 5},
			"tags": {"type": "array", "items": {"type": "string"}},
			"where": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat"]},
			"mode": {"anyOf": [{"type": "string", "enum": ["fast", "slow"]}, {"type": "null"}]},
			"x": {"type": ["string", "boolean"], "nullable": true},
			"y": {"type": "string", "nullable": true}}, "required": ["q"]}`)}
	msgs, err := r.ToolPrefix([]Tool{tool, {Name: "ping"}}, "Be brief.")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Content != "Calls to these tools must go to the commentary channel: 'functions'." || msgs[1].Role != "developer" {
		t.Fatalf("messages: %+v", msgs)
	}
	want := "# Instructions\n\nBe brief.\n\n# Tools\n\n## functions\n\nnamespace functions {\n\n" +
		"// Search the web\ntype search = (_: // Query options\n{\n" +
		"// Query\n// \n// What to look for\n// Examples:\n// - \"go\"\n// - \"\\u00dcn\\u00ef\"\nq: string,\n" +
		"n?: number, // default: 5\n" +
		"tags?: string[],\n" +
		"where?: { lat: number, lon?: number },\n" +
		"mode?: \"fast\" | \"slow\" | any,\n" +
		"x?: string | boolean,\n" +
		"y?: string | null,\n" +
		"}) => any;\n\n" +
		"type ping = () => any;\n\n} // namespace functions"
	if msgs[1].Content != want {
		t.Fatalf("developer message\n got %q\nwant %q", msgs[1].Content, want)
	}
	p, err := r.Render(append(msgs, Message{Role: "user", Content: "hi"}))
	if err != nil || !strings.HasPrefix(p.Text, "<|start|>system<|message|>Calls to these tools") {
		t.Fatalf("render: %v %q", err, p.Text)
	}
}

func TestToolPrefixRefused(t *testing.T) {
	for _, n := range []string{"llama3", "role_colon"} {
		r, _ := New(n, loadTok(t, "llama3_1"))
		if _, err := r.ToolPrefix([]Tool{weatherTool}, ""); err == nil || !strings.Contains(err.Error(), "no way to declare tools") {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestPyDumps(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":[1.5e-7,1e16,0.0001,100.0,1E400,-0,123456789012345678901234567890]}`: `{"a": 1, "b": [1.5e-07, 1e+16, 0.0001, 100.0, Infinity, 0, 123456789012345678901234567890]}`,
		`{"s":"é😀\u0001\n\"\\/"}`: `{"s": "\u00e9\ud83d\ude00\u0001\n\"\\/"}`,
		`[true,false,null,{}]`:    `[true, false, null, {}]`,
	} {
		got, err := pyCompact(in)
		if err != nil || got != want {
			t.Errorf("pyCompact(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := pyCompact(`{"a":1} x`); err == nil {
		t.Errorf("trailing text accepted")
	}
}

func TestMessageJSON(t *testing.T) {
	var m Message
	in := `{"role":"assistant","content":[{"type":"thinking","thinking":"r"},{"type":"text","text":"A"}],"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":{"b":1,"a":"é"}}}]}`
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if m.Content != "A" || len(m.Parts) != 2 || m.ToolCalls[0].Function.Arguments != `{"b": 1, "a": "\u00e9"}` {
		t.Fatalf("got %+v", m)
	}
	out, _ := json.Marshal(m)
	var back Message
	if err := json.Unmarshal(out, &back); err != nil || len(back.Parts) != 2 || back.ToolCalls[0].Function.Name != "f" {
		t.Fatalf("round trip: %s %v", out, err)
	}
	for bad, msg := range map[string]string{
		`{"role":"user","content":[{"type":"image","image":"x.png"}]}`:               "text-only",
		`{"role":"assistant","thinking":"t","content":[{"type":"text","text":"a"}]}`: "not both",
		`{"role":"assistant","content":"","tool_calls":[{"function":{}}]}`:           "no function name",
	} {
		if err := json.Unmarshal([]byte(bad), &m); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", bad, err, msg)
		}
	}
}

func TestToolPrefixQwen35(t *testing.T) {
	r, _ := New("qwen3_5", loadTok(t, "qwen3"))
	msgs, err := r.ToolPrefix([]Tool{weatherTool}, "Sys")
	if err != nil {
		t.Fatal(err)
	}
	c := msgs[0].Content
	if !strings.HasPrefix(c, "# Tools\n\nYou have access to the following functions:\n\n<tools>\n{\"name\": \"get_weather\", \"description\": \"Get the weather\", \"parameters\": {\"type\": \"object\", ") ||
		!strings.HasSuffix(c, "do not tell the user about function calls\n</IMPORTANT>\n\nSys") {
		t.Fatalf("qwen3_5 tools: %q", c)
	}
}

func TestToolPrefixNemotron(t *testing.T) {
	r, _ := New("nemotron3", loadTok(t, "qwen3"))
	tool := Tool{Name: "f", Description: " Does f. ", Parameters: json.RawMessage(
		`{"type": "object", "properties": {"a": {"type": ["string", "null"], "description": " A ", "enum": ["x", "y"], "default": null, "items": {"k": 1}}}, "required": ["a"], "additionalProperties": false}`)}
	msgs, err := r.ToolPrefix([]Tool{tool}, "Sys")
	if err != nil {
		t.Fatal(err)
	}
	want := "Sys\n\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n<function>\n<name>f</name>\n<description>Does f.</description>\n<parameters>\n" +
		"<parameter>\n<name>a</name>\n<type>['string', 'null']</type>\n<description>A</description>\n<enum>[\"x\", \"y\"]</enum>\n<default>None</default>\n<items>{\"k\": 1}</items>\n</parameter>\n" +
		"<additionalProperties>False</additionalProperties>\n<required>[\"a\"]</required>\n</parameters>\n</function>\n</tools>\n\nIf you choose"
	if c := msgs[0].Content; !strings.HasPrefix(c, want) || !strings.HasSuffix(c, "</IMPORTANT>") {
		t.Fatalf("nemotron tools:\n got %q\nwant prefix %q", c, want)
	}
}
