package models

import "testing"

func TestTableConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range All() {
		if seen[a.Name] {
			t.Errorf("duplicate %s", a.Name)
		}
		seen[a.Name] = true
		if a.Layers <= 0 || a.Hidden <= 0 || a.Heads <= 0 || a.KVHeads <= 0 || a.HeadDim <= 0 || a.VocabSize <= 0 || a.MaxPositionEmbeddings <= 0 {
			t.Errorf("%s: incomplete %+v", a.Name, a)
		}
		if a.Heads%a.KVHeads != 0 {
			t.Errorf("%s: heads %d not a multiple of kv heads %d", a.Name, a.Heads, a.KVHeads)
		}
		if (a.Experts > 0) != (a.MoEIntermediate > 0 && a.ExpertsPerToken > 0) {
			t.Errorf("%s: inconsistent MoE fields", a.Name)
		}
	}
	// The service's get_server_capabilities listed these 21 models in December 2025.
	snapshot := []string{"deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3.1-Base", "moonshotai/Kimi-K2-Thinking",
		"meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B",
		"meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.3-70B-Instruct", "Qwen/Qwen3-235B-A22B-Instruct-2507",
		"Qwen/Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B-Base", "Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-32B",
		"Qwen/Qwen3-4B-Instruct-2507", "Qwen/Qwen3-8B", "Qwen/Qwen3-8B-Base", "Qwen/Qwen3-VL-235B-A22B-Instruct",
		"Qwen/Qwen3-VL-30B-A3B-Instruct", "openai/gpt-oss-120b", "openai/gpt-oss-20b"}
	if len(snapshot) != 21 {
		t.Fatal("snapshot list miscounted")
	}
	for _, n := range snapshot {
		if _, ok := Lookup(n); !ok {
			t.Errorf("missing %s", n)
		}
	}
}

func TestLookup(t *testing.T) {
	a, ok := Lookup("qwen/qwen3-8b:peft:1")
	if !ok || a.Name != "Qwen/Qwen3-8B" || a.Layers != 36 {
		t.Fatalf("lookup = %+v %v", a, ok)
	}
	if _, ok := Lookup("nope/x"); ok {
		t.Error("unknown model found")
	}
	tiny, _ := Lookup(TinyLlama)
	if tiny.VocabSize != 260 || tiny.Hidden != 64 || tiny.Layers != 2 {
		t.Errorf("tiny-llama changed: %+v", tiny)
	}
	if Names()[0] != TinyLlama || Names()[1] != TinyQwen3 {
		t.Errorf("tiny models not first: %v", Names()[:2])
	}
	ds, _ := Lookup("deepseek-ai/DeepSeek-V3.1")
	if ds.IsMoELayer(2) || !ds.IsMoELayer(3) {
		t.Error("DeepSeek first dense layers wrong")
	}
}

func TestFamilyOf(t *testing.T) {
	cases := map[string]Family{
		TinyQwen3:                          Qwen3,
		"qwen/qwen3-30b-a3b:peft:1":        Qwen3MoE, // in the table: exact, case-insensitive
		"moonshotai/Kimi-K2-Thinking":      DeepSeekV3,
		"meta-llama/Llama-3.2-3B-Instruct": Llama3, // outside the table: by name
		"deepseek-ai/DeepSeek-V3":          DeepSeekV3,
		"openai/gpt-oss-safeguard-20b":     GptOss,
		"Qwen/Qwen3-14B:x":                 Qwen3,
	}
	for name, want := range cases {
		if got, ok := FamilyOf(name); !ok || got != want {
			t.Errorf("FamilyOf(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"thinkingmachines/Inkling", "Qwen/Qwen2.5-7B", "nope"} {
		if f, ok := FamilyOf(name); ok {
			t.Errorf("FamilyOf(%q) = %q, want unknown", name, f)
		}
	}
	if !IsTiny(TinyLlama) || IsTiny("meta-llama/Llama-3.2-1B") || TinyVocab != 260 || TinySpecials[TinyEOS-TinyBOS] != "<eos>" {
		t.Error("tiny model constants")
	}
}
