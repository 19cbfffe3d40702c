package tokenizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The 2026 lineup's tokenizer.json patterns: Qwen3.5/3.6/3.8 keep marks
// with letters; Nemotron 3 (NVIDIA's tiktoken-v2 vocabulary, Tekken's
// pattern) splits digits one by one and has no contraction branch.
func TestLineupPatternPieces(t *testing.T) {
	initClasses()
	cases := []struct {
		pattern string
		in      string
		want    []string
	}{
		{patQwen35, "नमस्ते दुनिया", []string{"नमस्ते", " दुनिया"}},
		{patQwen, "नमस्ते", []string{"नमस", "्त", "े"}},
		{patQwen35, "I'LL pay 42€\u0301!!\n\n", []string{"I", "'LL", " pay", " ", "4", "2", "€\u0301", "!!\n\n"}},
		{patTekken, "don't 2024 HTTPServer/x", []string{"don", "'t", " ", "2", "0", "2", "4", " HTTPServer", "/x"}},
		{patO200K, "don't 2024", []string{"don't", " ", "202", "4"}},
	}
	for _, c := range cases {
		if got := pieces(matchSplit{handWritten.Get()[c.pattern]}, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%.20s… on %q = %q, want %q", c.pattern, c.in, got, c.want)
		}
	}
}

// A tokenizer.json with Qwen3.5's normalizer and pre-tokenizer loads with
// the hand-written matcher (no regexp2) and encodes through it.
func TestQwen35TokenizerJSONLoads(t *testing.T) {
	var tj map[string]any
	if err := json.Unmarshal(tinyTokenizerJSON(false), &tj); err != nil {
		t.Fatal(err)
	}
	tj["normalizer"] = map[string]any{"type": "NFC"}
	tj["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": patQwen35}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
	}}
	b, _ := json.Marshal(tj)
	tk, err := FromFiles(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	seq, ok := tk.pre.(sequence)
	if !ok || len(seq) != 1 {
		t.Fatalf("pre-tokenizer %T %v", tk.pre, tk.pre)
	}
	if _, ok := seq[0].(matchSplit); !ok {
		t.Fatalf("Qwen3.5's pattern runs on %T, want the hand-written matcher", seq[0])
	}
	s := "the the e\u0301"
	if d := tk.Decode(tk.Encode(s, false), false); d != strings.ReplaceAll(s, "e\u0301", "é") {
		t.Errorf("round trip with NFC = %q", d)
	}
}
