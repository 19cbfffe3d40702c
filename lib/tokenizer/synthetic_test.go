package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// tinyTokenizerJSON builds a small byte-level BPE tokenizer.json with the
// merges in the given JSON form, writing vocabulary keys with \u escapes
// to exercise the hand-written JSON scanner.
func tinyTokenizerJSON(pairMerges bool) []byte {
	var vocab []string
	for b := 0; b < 256; b++ {
		r := byteLevel.Get().byteToRune[b]
		key := fmt.Sprintf(`"\u%04x"`, r) // every key escaped
		if r == '"' || r == '\\' {
			key = fmt.Sprintf(`"\%c"`, r)
		}
		vocab = append(vocab, fmt.Sprintf(`%s: %d`, key, b))
	}
	// merges: "Ġ t" → "Ġt", "h e" → "he", "Ġt he" → "Ġthe"
	extra := map[string]int{"Ġt": 256, "he": 257, "Ġthe": 258, "😀": 259}
	for k, id := range extra {
		b, _ := json.Marshal(k)
		vocab = append(vocab, fmt.Sprintf("%s:%d", b, id))
	}
	merges := `["Ġ t", "h e", "Ġt he"]`
	if pairMerges {
		merges = `[["Ġ","t"],["h","e"],["Ġt","he"]]`
	}
	return []byte(`{"version":"1.0","truncation":null,"padding":null,
	"added_tokens":[{"id":260,"content":"<|end|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
	"normalizer":null,
	"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
	"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<|end|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<|end|>":{"id":"<|end|>","ids":[260],"tokens":["<|end|>"]}}},
	"decoder":{"type":"ByteLevel"},
	"model":{"type":"BPE","dropout":null,"unk_token":null,"ignore_merges":false,"vocab":{` + strings.Join(vocab, ",\n") + `},"merges":` + merges + `}}`)
}

func TestSyntheticTokenizer(t *testing.T) {
	for _, pairs := range []bool{false, true} {
		tk, err := FromFiles(tinyTokenizerJSON(pairs), []byte(`{"eos_token":{"__type":"AddedToken","content":"<|end|>"},"chat_template":[{"name":"default","template":"T"}]}`))
		if err != nil {
			t.Fatalf("pairs=%v: %v", pairs, err)
		}
		got := tk.Encode("the the<|end|>", true)
		// GPT-2 regex: "the", " the"; "the" → t + he; " the" → Ġt + he → Ġthe
		want := []int{260, 't', 257, 258, 260}
		if !slices.Equal(got, want) {
			t.Fatalf("pairs=%v: Encode = %v, want %v", pairs, got, want)
		}
		if d := tk.Decode(got, true); d != "the the" {
			t.Fatalf("Decode = %q", d)
		}
		if c := tk.Config(); c.EOSToken != "<|end|>" || c.ChatTemplate != "T" {
			t.Fatalf("config = %+v", c)
		}
		if id, ok := tk.TokenID("😀"); !ok || id != 259 {
			t.Fatalf("escaped surrogate-pair key: %d %v", id, ok)
		}
		if id, ok := tk.TokenID(`"`); !ok || id != '"' {
			t.Fatalf(`escaped quote key: %d %v`, id, ok)
		}
	}
}

func TestUnsupportedConfigsFailClearly(t *testing.T) {
	base := string(tinyTokenizerJSON(false))
	for name, mutate := range map[string]func(string) string{
		"wordpiece": func(s string) string { return strings.Replace(s, `"type":"BPE"`, `"type":"WordPiece"`, 1) },
		"decoder": func(s string) string {
			return strings.Replace(s, `"decoder":{"type":"ByteLevel"}`, `"decoder":{"type":"Metaspace"}`, 1)
		},
		"truncated": func(s string) string { return s[:len(s)/2] },
	} {
		if _, err := FromFiles([]byte(mutate(base)), nil); err == nil {
			t.Errorf("%s: expected an error", name)
		}
	}
}

// lstrip/rstrip added tokens swallow adjacent whitespace; tokens marked
// normalized are matched after the normalizer (here NFC) runs.
func TestAddedTokenOptions(t *testing.T) {
	js := string(tinyTokenizerJSON(false))
	js = strings.Replace(js, `"added_tokens":[`, `"added_tokens":[{"id":261,"content":"<L>","single_word":false,"lstrip":true,"rstrip":true,"normalized":false,"special":false},{"id":262,"content":"é","single_word":false,"lstrip":false,"rstrip":false,"normalized":true,"special":false},`, 1)
	js = strings.Replace(js, `"normalizer":null`, `"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"}]}`, 1)
	tk, err := FromFiles([]byte(js), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := tk.Encode("a  <L>  b e\u0301", false)
	want := []int{'a', 261, 'b', byteLevelID(tk, ' '), 262}
	if !slices.Equal(got, want) {
		t.Fatalf("Encode = %v, want %v", got, want)
	}
}

func byteLevelID(tk *Tokenizer, b byte) int { return int(tk.model.byteID[b]) }
