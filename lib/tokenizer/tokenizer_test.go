package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The hand-written Split matchers must agree with the same patterns run by a
// general regex engine with look-ahead (regexp2) on the whole corpus.
func TestHandWrittenMatchesRegexp2(t *testing.T) {
	for _, f := range families {
		if f.name == "llama3" {
			continue // same pre-tokenizer as llama3_1
		}
		t.Run(f.name, func(t *testing.T) {
			tk := loadFamily(t, f)
			dir := familyDir(t, f)
			tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rx *Tokenizer
			if rx, err = FromFiles(tj, nil, withRegexp2()); err != nil {
				t.Fatal(err)
			}
			if _, ok := rx.pre.(sequence); !ok {
				t.Fatalf("unexpected pre-tokenizer %T", rx.pre)
			}
			for i, s := range buildCorpus(tk, 2000) {
				got, want := pieces(tk.pre, s), pieces(rx.pre, s)
				if !slices.Equal(got, want) {
					t.Fatalf("string %d %q:\nhand-written %q\n     regexp2 %q", i, trunc(s), got, want)
				}
			}
		})
	}
}

func pieces(p preTokenizer, s string) []string {
	var out []string
	p.split(s, func(x string) { out = append(out, x) })
	return out
}

// Where transformers.js differs from Hugging Face's own tokenizers (whose
// regexes run on Oniguruma), we follow Hugging Face; these cases pin that down.
//   - JavaScript's \s includes U+FEFF (a format character, not Unicode
//     White_Space) and excludes U+0085 (which is White_Space). For Llama 3,
//     "a \ufeffb" is [64 220 3305 65] in transformers.js 3.7.2 ("a", " ",
//     "\ufeff", "b") but [64 76880 65] here (" \ufeff" is one
//     ` ?[^\s\p{L}\p{N}]+` piece). For U+0085 the pieces differ but the ids
//     happen to agree. regexp2 (.NET rules) agrees with us on both.
//   - (?i:'s) folds case the Unicode way, so "'ſ" (long s) is a contraction
//     piece; transformers.js rewrites the group to [sS]. The ids agree for
//     these vocabularies (no merge joins "'" and "ſ").
func TestReferenceDivergences(t *testing.T) {
	initClasses()
	m := func(s string) []string {
		return pieces(matchSplit{func(s string, i int) int { return matchCL100K(s, i, 3) }}, s)
	}
	cases := []struct {
		in   string
		want []string
	}{
		{"a\u0085 b", []string{"a", "\u0085", " b"}}, // NEL is whitespace: \s+(?!\S) leaves " b"
		{"a \ufeffb", []string{"a", " \ufeff", "b"}}, // BOM is a format character, not whitespace
		{"it'ſ x", []string{"it", "'ſ", " x"}},       // long s folds to s
		{"it'S x", []string{"it", "'S", " x"}},
		{"  \n\n  x", []string{"  \n\n", " ", " x"}},
		{"x   ", []string{"x", "   "}},
	}
	tk := loadFamily(t, family{"llama3_1"})
	if got := tk.Encode("a \ufeffb", false); !slices.Equal(got, []int{64, 76880, 65}) {
		t.Errorf("llama3 BOM case = %v", got)
	}
	for _, c := range cases {
		if got := m(c.in); !slices.Equal(got, c.want) {
			t.Errorf("split %q = %q, want %q", c.in, got, c.want)
		}
		rx, err := newRegexSplit(patLlama3)
		if err != nil {
			t.Fatal(err)
		}
		if c.in == "it'ſ x" {
			continue // .NET case-insensitivity does not fold ſ
		}
		if got := pieces(rx, c.in); !slices.Equal(got, c.want) {
			t.Errorf("regexp2 split %q = %q, want %q", c.in, got, c.want)
		}
	}
}

// The heap merge loop used for long pieces must give what the linear one
// gives.
func TestBPEHeapMatchesNaive(t *testing.T) {
	tk := loadFamily(t, families[1])
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{" ", "a", "b", "the", "ing", "中", "1", "\n", "é", "!!", "ab", "  "}
	for k := 0; k < 3000; k++ {
		var b strings.Builder
		for n := 1 + r.IntN(40); n > 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if len(s) > naiveMaxSymbols {
			s = s[:naiveMaxSymbols]
		}
		naive := tk.model.mergeNaive(s, nil)
		heap := tk.model.mergeHeap(s)
		if !slices.Equal(naive, heap) {
			t.Fatalf("%q: naive %v heap %v", s, naive, heap)
		}
	}
}

func TestSpecialTokensAndBOS(t *testing.T) {
	l := loadFamily(t, family{"llama3_1"})
	if got := l.Encode("<|begin_of_text|>Hi<|eot_id|>", false); !slices.Equal(got, []int{128000, 13347, 128009}) {
		t.Errorf("llama3.1 specials: %v", got)
	}
	if got := l.Encode("Hi", true); !slices.Equal(got, []int{128000, 13347}) {
		t.Errorf("llama3.1 BOS: %v", got)
	}
	if got := l.Decode([]int{128000, 13347, 128009}, true); got != "Hi" {
		t.Errorf("skip special: %q", got)
	}
	if id, ok := l.TokenID("<|eot_id|>"); !ok || id != 128009 {
		t.Errorf("TokenID(<|eot_id|>) = %d %v", id, ok)
	}
	if id, ok := l.TokenID(" the"); !ok || id != 279 {
		t.Errorf("TokenID(' the') = %d %v", id, ok)
	}
	if l.VocabSize() != 128256 {
		t.Errorf("VocabSize = %d", l.VocabSize())
	}
	q := loadFamily(t, family{"qwen3"})
	if got := q.Encode("Hi", true); len(got) != 1 {
		t.Errorf("qwen adds no BOS: %v", got)
	}
	d := loadFamily(t, family{"deepseek_v3"})
	if got := d.Encode("Hi", true); got[0] != 0 {
		t.Errorf("deepseek BOS (LlamaTokenizerFast add_bos_token): %v", got)
	}
	if c := q.Config(); c.EOSToken != "<|im_end|>" || !strings.Contains(c.ChatTemplate, "<|im_start|>") {
		t.Errorf("qwen config: %+v", c.EOSToken)
	}
}

func TestValidUTF8(t *testing.T) {
	cases := map[string]string{
		"abc":                      "abc",
		"\xe2\x82":                 "\ufffd",       // truncated 3-byte sequence: one U+FFFD
		"\xe2\x82x":                "\ufffdx",      // ... followed by ASCII
		"\xff\xfe":                 "\ufffd\ufffd", // two invalid bytes
		"\xf0\x9f\x98":             "\ufffd",
		"\xed\xa0\x80":             "\ufffd\ufffd\ufffd", // surrogate: each byte
		"a\xc3":                    "a\ufffd",
		"\xf0\x9f\x98\x80\xf0\x9f": "😀\ufffd",
	}
	for in, want := range cases {
		if got := ValidUTF8([]byte(in)); got != want {
			t.Errorf("ValidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStreamDecodesSplitCharacters(t *testing.T) {
	tk := loadFamily(t, family{"llama3_1"})
	text := "emoji 👨‍👩‍👧 and 中文 and é"
	ids := tk.Encode(text, false)
	s := tk.NewStream(false)
	var b strings.Builder
	for _, id := range ids {
		part := s.Add(id)
		if !utf8.ValidString(part) || strings.ContainsRune(part, utf8.RuneError) {
			t.Fatalf("stream emitted a broken character: %q", part)
		}
		b.WriteString(part)
	}
	b.WriteString(s.Flush())
	if b.String() != text {
		t.Fatalf("stream = %q, want %q", b.String(), text)
	}
	// A prefix cut inside a character decodes with U+FFFD.
	var cut []int
	for i := range ids {
		if d := tk.Decode(ids[:i], false); strings.HasSuffix(d, "\ufffd") {
			cut = ids[:i]
			break
		}
	}
	if cut == nil {
		t.Fatal("expected some prefix to end inside a character")
	}
}

// A tokenizer is shared by the whole process; encoding from many goroutines
// (with the piece cache filling up concurrently) must give the same ids.
func TestConcurrentEncode(t *testing.T) {
	tk := loadFamily(t, family{"qwen3"})
	corpus := buildCorpus(tk, 400)
	want := make([][]int, len(corpus))
	for i, s := range corpus {
		want[i] = tk.Encode(s, false)
	}
	tk.model.cache.reset()
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			for k := range corpus {
				i := (k*7 + g*31) % len(corpus)
				if got := tk.Encode(corpus[i], false); !slices.Equal(got, want[i]) {
					errs <- fmt.Sprintf("goroutine %d string %d differs", g, i)
					return
				}
			}
			errs <- ""
		}(g)
	}
	for g := 0; g < 8; g++ {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
}

// Dense random strings over the characters that steer the patterns'
// backtracking (apostrophes and case, marks, Lm/Lo/Lt letters, line breaks,
// odd spaces): hand-written matchers and regexp2 must split them alike.
func TestMatchersFuzzAgainstRegexp2(t *testing.T) {
	initClasses()
	alphabet := trickyChars
	patterns := map[string][]string{
		"llama3":   {patLlama3},
		"qwen":     {patQwen},
		"o200k":    {patO200K},
		"deepseek": {patDigits3, patDSCJK, patDSMain},
		"qwen3.5":  {patQwen35},
		"tekken":   {patTekken},
	}
	r := rand.New(rand.NewPCG(7, 11))
	for name, pats := range patterns {
		var hand, rx sequence
		for _, p := range pats {
			hand = append(hand, matchSplit{handWritten.Get()[p]})
			re, err := newRegexSplit(p)
			if err != nil {
				t.Fatal(err)
			}
			rx = append(rx, re)
		}
		for k := 0; k < 20000; k++ {
			s := trickyString(r, alphabet)
			if got, want := pieces(hand, s), pieces(rx, s); !slices.Equal(got, want) {
				t.Fatalf("%s: %q\nhand-written %q\n     regexp2 %q", name, s, got, want)
			}
		}
	}
}

func TestCleanUpTokenizationSpaces(t *testing.T) {
	if got := CleanUpTokenizationSpaces("Hello , world ! I 'm sure it 's fine . Is n't it ?"); got != "Hello, world! I'm sure it's fine. Isn't it?" {
		t.Errorf("clean-up = %q", got)
	}
	if !loadFamily(t, family{"llama3_1"}).Config().CleanUpSpaces || loadFamily(t, family{"qwen3"}).Config().CleanUpSpaces {
		t.Error("CleanUpSpaces should follow tokenizer_config.json (llama3 true, qwen3 false)")
	}
}
