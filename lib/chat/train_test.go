package chat

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tokenizer"
)

// trainedText decodes the weight-1 tokens of a training render.
func trainedText(t *testing.T, tr Training, decode func([]int) string) []string {
	t.Helper()
	var out []string
	var run []int
	for i, w := range tr.Weights {
		if w == 1 {
			run = append(run, tr.Tokens[i])
			continue
		}
		if len(run) > 0 {
			out = append(out, decode(run))
			run = nil
		}
	}
	if len(run) > 0 {
		out = append(out, decode(run))
	}
	return out
}

func TestRenderForTraining(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Be nice."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"},
		{Role: "user", Content: "Bye"}, {Role: "assistant", Content: "Ciao"}}
	for _, c := range []struct {
		tok, renderer, rule string
		want                []string
	}{
		// role_colon trains the whole stop sequence "\n\nUser:" after the
		// last answer (item 4 of issue 28).
		{"llama3_1", "role_colon", TrainAllAssistant, []string{" Hello\n\n", " Ciao\n\nUser:"}},
		{"llama3_1", "role_colon", TrainLastAssistant, []string{" Ciao\n\nUser:"}},
		{"llama3_1", "llama3", TrainAllAssistant, []string{"Hello<|eot_id|>", "Ciao<|eot_id|>"}},
		// No "\n" after the final <|im_end|> (item 5).
		{"qwen3", "qwen3_disable_thinking", TrainLastAssistant, []string{"Ciao<|im_end|>"}},
		{"qwen3", "qwen3", TrainLastAssistant, []string{"<think>\n\n</think>\n\nCiao<|im_end|>"}},
	} {
		tk := loadTok(t, c.tok)
		r, err := New(c.renderer, tk)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := r.RenderForTraining(msgs, c.rule)
		if err != nil {
			t.Fatalf("%s %s: %v", c.renderer, c.rule, err)
		}
		if len(tr.Tokens) != len(tr.Weights) {
			t.Fatalf("%d tokens, %d weights", len(tr.Tokens), len(tr.Weights))
		}
		got := trainedText(t, tr, func(ids []int) string { return tk.Decode(ids, false) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s trains on %q, want %q", c.renderer, c.rule, got, c.want)
		}
		// The context before the last answer encodes as render()'s prompt.
		p, err := r.Render(msgs[:4])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tr.Tokens[:len(p.Tokens)], p.Tokens) {
			t.Errorf("%s: the training tokens do not start with the prompt's", c.renderer)
		}
	}
	tk := loadTok(t, "llama3_1")
	r, _ := New("role_colon", tk)
	all, err := r.RenderForTraining(msgs, TrainAllMessages)
	if err != nil {
		t.Fatal(err)
	}
	// all_messages trains message bodies, not the "User:" headers.
	got := trainedText(t, all, func(ids []int) string { return tk.Decode(ids, false) })
	want := []string{" Be nice.\n\n", " Hi\n\n", " Hello\n\n", " Bye\n\n", " Ciao\n\nUser:"}
	if !slices.Equal(got, want) {
		t.Errorf("all_messages trains %q, want %q", got, want)
	}
	if _, err := r.RenderForTraining(msgs, "some"); err == nil || !strings.Contains(err.Error(), "unknown train_on") {
		t.Errorf("bad rule: %v", err)
	}
}

// RenderExamples is build_supervised_examples: one example for renderers
// that keep history, one per trained turn for those that rewrite it (each
// trained after its own prompt), per user turn for Kimi.
func TestRenderExamples(t *testing.T) {
	conv := []Message{{Role: "user", Content: "q1"}, {Role: "assistant", Content: "A1", Thinking: "r1"},
		{Role: "user", Content: "q2"}, {Role: "assistant", Content: "A2", Thinking: "r2"}}
	q, _ := New("qwen3", loadTok(t, "qwen3"))
	ex, err := q.RenderExamples(conv, TrainAllAssistant)
	if err != nil || len(ex) != 2 {
		t.Fatalf("qwen3: %d examples, %v", len(ex), err)
	}
	dec := func(ids []int) string { return loadTok(t, "qwen3").Decode(ids, false) }
	// The first turn is trained with its own reasoning, as it was produced.
	if got := trainedText(t, ex[0], dec); !slices.Equal(got, []string{"<think>\nr1\n</think>\n\nA1<|im_end|>"}) {
		t.Errorf("first example trains %q", got)
	}
	if got := trainedText(t, ex[1], dec); !slices.Equal(got, []string{"<think>\nr2\n</think>\n\nA2<|im_end|>"}) {
		t.Errorf("second example trains %q", got)
	}
	if _, err := q.RenderExamples(conv, TrainAllMessages); err == nil {
		t.Error("all_messages split into turns for a history-rewriting renderer")
	}
	l, _ := New("llama3", loadTok(t, "llama3_1"))
	plain := []Message{conv[0], {Role: "assistant", Content: "A1"}, conv[2], {Role: "assistant", Content: "A2"}}
	if ex, err := l.RenderExamples(plain, TrainAllMessages); err != nil || len(ex) != 1 || ex[0].Warning != "" {
		t.Errorf("llama3: %d examples, %v", len(ex), err)
	}
	k, _ := New("kimi_k2", loadTok(t, "kimi_synthetic"))
	ex, err = k.RenderExamples(conv, TrainAllAssistant)
	if err != nil || len(ex) != 2 {
		t.Fatalf("kimi: %d examples, %v", len(ex), err)
	}
	kdec := func(ids []int) string { return loadTok(t, "kimi_synthetic").Decode(ids, false) }
	if got := trainedText(t, ex[0], kdec); !slices.Equal(got, []string{"<think>r1</think>A1<|im_end|>"}) {
		t.Errorf("kimi first example trains %q", got)
	}
}

func TestKimiToolPrefix(t *testing.T) {
	k, _ := New("kimi_k2", loadTok(t, "kimi_synthetic"))
	msgs, err := k.ToolPrefix([]Tool{weatherTool}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"function":{"description":"Get the weather","name":"get_weather","parameters":{"properties":{"city":{"description":"City name","type":"string"},"unit":{"default":"c","enum":["c","f"],"type":"string"}},"required":["city"],"type":"object"}},"type":"function"}]`
	if len(msgs) != 2 || msgs[0].Role != "tool_declare" || msgs[0].Content != want || msgs[1].Content != kimiDefaultSystem {
		t.Fatalf("kimi tools: %+v", msgs)
	}
}

// Kimi K2.5's TypeScript declarations, written out by hand from its
// tool_declaration_ts rules (required fields first, sorted; comments for
// descriptions, constraints and defaults; $defs as interfaces).
func TestKimiK25ToolPrefix(t *testing.T) {
	weather := Tool{Name: "get_weather", Description: "Get weather.\nSecond line", Parameters: json.RawMessage(`{"type": "object", "properties": {
		"unit": {"type": "string", "enum": ["c", "f"], "description": "Unit"},
		"city": {"type": "string", "description": "City name", "minLength": 1},
		"days": {"type": "integer", "maximum": 7, "minimum": 1, "default": 3},
		"tags": {"type": "array", "items": {"type": "string", "description": "A tag"}},
		"opts": {"type": "object", "properties": {"x": {"type": "boolean"}}, "additionalProperties": false},
		"when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
		"note": {"type": "string", "default": "é"}}, "required": ["city", "unit"]}`)}
	tree := Tool{Name: "tree", Parameters: json.RawMessage(`{"type": "object", "$defs": {"Node": {"type": "object", "description": "A node",
		"properties": {"v": {"type": "number"}}, "required": ["v"]}}, "properties": {"root": {"$ref": "#/$defs/Node"}, "self": {"$ref": "#"}}}`)}
	k, _ := New("kimi_k26", loadTok(t, "kimi_synthetic"))
	msgs, err := k.ToolPrefix([]Tool{weather, tree}, "Sys")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Tools\n\n## functions\nnamespace functions {\n" +
		"// Get weather.\n// Second line\ntype get_weather = (_: {\n" +
		"  // City name\n  // minLength: 1\n  city: string,\n" +
		"  // Unit\n  unit: \"c\" | \"f\",\n" +
		"  // maximum: 7, minimum: 1\n  // Default: 3\n  days?: number,\n" +
		"  // Default: \"é\"\n  note?: string,\n" +
		"  opts?: {\n    x?: boolean,\n    [k: string]: never\n  },\n" +
		"  tags?: Array<\n    // A tag\n    string\n  >,\n" +
		"  when?: string | null\n}) => any;\n" +
		"interface parameters {\n  root?: Node,\n  self?: parameters\n}\n// A node\ninterface Node {\n  v: number\n}\ntype tree = (_: parameters) => any;\n}\n"
	if len(msgs) != 2 || msgs[0].Role != "tool_declare" || msgs[0].Content != want || msgs[1].Content != "Sys" {
		t.Fatalf("kimi_k25 tools:\n got %q\nwant %q", msgs[0].Content, want)
	}
}

// Every renderer whose format has special tokens refuses a vocabulary
// without them, for training as for prompts (27 renderers used to spell
// their specials in bytes when training, and Qwen3's panicked).
func TestWrongTokenizerRefused(t *testing.T) {
	tiny, err := tokenizer.Tiny()
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "Sky?"}, {Role: "assistant", Content: "Blue."}}
	for _, name := range Names() {
		if name == "role_colon" || name == "tml_v0" {
			continue
		}
		r, err := New(name, tiny)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := r.RenderForTraining(msgs, TrainAllAssistant); err == nil || !strings.Contains(err.Error(), "wrong tokenizer") {
			t.Errorf("%s: training on a byte vocabulary: %v, want a wrong-tokenizer error", name, err)
		}
		if _, err := r.Render(msgs[:1]); err == nil || !strings.Contains(err.Error(), "wrong tokenizer") {
			t.Errorf("%s: prompt on a byte vocabulary: %v, want a wrong-tokenizer error", name, err)
		}
	}
}
