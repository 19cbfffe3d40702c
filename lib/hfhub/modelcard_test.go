package hfhub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepoNaming(t *testing.T) {
	for in, want := range map[string]string{
		"tinker-Qwen3-8B-run-1":      "tinker-Qwen3-8B-run-1",
		"tinker-x-a1b2:train:0":      "tinker-x-a1b2-train-0",
		"--a  b--":                   "a-b",
		"._tinker-Ünïcode-ok_.":      "tinker-Ünïcode-ok",
		"sampler_weights/0001":       "sampler_weights-0001",
		"tinker-Llama-3.1-8B-r/../x": "tinker-Llama-3.1-8B-r-..-x",
	} {
		if got := SanitizeRepoName(in); got != want {
			t.Errorf("SanitizeRepoName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := DefaultRepoID("Qwen/Qwen3-8B", "run-1"); got != "tinker-Qwen3-8B-run-1" {
		t.Errorf("DefaultRepoID = %q", got)
	}
	if got := DefaultRepoID("unknown", "abc:train:0"); got != "tinker-adapter-abc-train-0" {
		t.Errorf("DefaultRepoID unknown base = %q", got)
	}
	if got := DefaultRevision("sampler_weights/0001"); got != "sampler_weights-0001" {
		t.Errorf("DefaultRevision = %q", got)
	}
}

func TestModelCardUnknownBase(t *testing.T) {
	card := ModelCard("alice/tinker-adapter-r", "tinker://r:train:0/sampler_weights/final", AdapterInfo{})
	if !strings.HasPrefix(card, "---\nbase_model: unknown\nlibrary_name: peft\ntags:\n- tinker\n- peft\n- lora\ntinker_path: tinker://r:train:0/sampler_weights/final\n---\n") {
		t.Errorf("front matter:\n%s", card)
	}
	if strings.Contains(card, "base_model:adapter") || strings.Contains(card, "LoRA rank") || strings.Contains(card, "Trained modules") {
		t.Errorf("unknown facts shown:\n%s", card)
	}
	if !strings.HasSuffix(card, "\n") || strings.HasSuffix(card, "\n\n") {
		t.Error("card must end with exactly one newline")
	}
	if got := FindTinkerPath(card); got != "tinker://r:train:0/sampler_weights/final" {
		t.Errorf("FindTinkerPath = %q", got)
	}
	if got := FindTinkerPath("see `tinker://a/b/c` here"); got != "tinker://a/b/c" {
		t.Errorf("FindTinkerPath stops at a backtick: %q", got)
	}
	if got := yamlValue("a: b #c"); got != `"a: b #c"` {
		t.Errorf("yamlValue quotes = %s", got)
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		pat, path string
		want      bool
	}{
		{"*.json", "adapter_config.json", true},
		{"*.json", "sub/x.json", true}, // '*' spans '/'
		{"logs/", "logs/a/b.txt", true},
		{"checkpoint_complete", "checkpoint_complete", true},
		{"checkpoint_complete", "x/checkpoint_complete", false},
		{"adapter_model.?in", "adapter_model.bin", true},
		{"[!a]*", "adapter", false},
		{"[a-c]*", "b.txt", true},
		{"[]x]", "]", true},
		{"[", "[", true},
		{"*.JSON", "a.json", false},
		{`logs\`, "logs/x", true},
	}
	for _, c := range cases {
		re, err := globRE(c.pat)
		if err != nil {
			t.Fatalf("%q: %v", c.pat, err)
		}
		if got := re.MatchString(c.path); got != c.want {
			t.Errorf("glob %q on %q = %v, want %v", c.pat, c.path, got, c.want)
		}
	}
}

func TestTokenFromEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HUGGING_FACE_HUB_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", "")
	if tok, src := TokenFromEnv(); tok != "" || src != "" {
		t.Fatalf("no token: got %q from %q", tok, src)
	}
	os.WriteFile(filepath.Join(home, "token"), []byte("hf_home\n"), 0o600)
	if tok, src := TokenFromEnv(); tok != "hf_home" || src != filepath.Join(home, "token") {
		t.Fatalf("HF_HOME/token: got %q from %q", tok, src)
	}
	other := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(other, []byte("hf_path"), 0o600)
	t.Setenv("HF_TOKEN_PATH", other)
	if tok, src := TokenFromEnv(); tok != "hf_path" || src != other {
		t.Fatalf("HF_TOKEN_PATH: got %q from %q", tok, src)
	}
	t.Setenv("HF_TOKEN", "hf_env")
	if tok, src := TokenFromEnv(); tok != "hf_env" || src != "HF_TOKEN" {
		t.Fatalf("HF_TOKEN: got %q from %q", tok, src)
	}
}
