package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kimiConfig is a tokenizer_config.json shaped like Kimi K2's: the special
// tokens named in added_tokens_decoder, ids counted from numBase.
func kimiConfig(numBase int) []byte {
	names := map[int]string{0: "[BOS]", 1: "[EOS]", 2: "<|im_end|>", 3: "<|im_user|>", 4: "<|im_assistant|>",
		6: "<|start_header_id|>", 7: "<|end_header_id|>", 10: "<|im_system|>", 13: "<|im_middle|>", 15: "[PAD]"}
	dec := map[string]any{}
	for off, name := range names {
		dec[fmt.Sprint(numBase+off)] = map[string]any{"content": name, "lstrip": false, "normalized": false,
			"rstrip": false, "single_word": false, "special": true}
	}
	b, _ := json.Marshal(map[string]any{"added_tokens_decoder": dec, "bos_token": "[BOS]", "eos_token": "[EOS]",
		"pad_token": "[PAD]", "tokenizer_class": "TikTokenTokenizer",
		"auto_map": map[string]any{"AutoTokenizer": []any{"tokenization_kimi.TikTokenTokenizer", nil}}})
	return b
}

// kimiSpecials is the special-token map tokenization_kimi.py builds from
// kimiConfig: its names, and reserved names for the rest of the 258 slots.
func kimiSpecials(t *testing.T, numBase int) map[string]int {
	var c struct {
		Decoder map[string]struct{ Content string } `json:"added_tokens_decoder"`
	}
	if err := json.Unmarshal(kimiConfig(numBase), &c); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for id := numBase; id < numBase+258; id++ {
		name := fmt.Sprintf("<|reserved_token_%d|>", id)
		if d, ok := c.Decoder[fmt.Sprint(id)]; ok {
			name = d.Content
		}
		out[name] = id
	}
	return out
}

// rankFile writes tokens as a tiktoken.model, rank = position.
func rankFile(tokens []string) []byte {
	var b bytes.Buffer
	for i, tok := range tokens {
		fmt.Fprintf(&b, "%s %d\n", base64.StdEncoding.EncodeToString([]byte(tok)), i)
	}
	return b.Bytes()
}

// syntheticRanks is every byte, then merged tokens drawn from a small
// alphabet in random order, so that merge order matters.
func syntheticRanks(r *rand.Rand) []string {
	var toks []string
	for b := 0; b < 256; b++ {
		toks = append(toks, string([]byte{byte(b)}))
	}
	seen := map[string]bool{}
	for _, s := range toks {
		seen[s] = true
	}
	alphabet := []string{"a", "b", "c", " ", "中", "é"}
	for len(toks) < 256+300 {
		var s string
		for n := 2 + r.IntN(4); n > 0; n-- {
			s += alphabet[r.IntN(len(alphabet))]
		}
		if !seen[s] {
			seen[s] = true
			toks = append(toks, s)
		}
	}
	return toks
}

// tiktokenMergeRef is tiktoken's byte-pair merge as its Python/Rust code
// describes it, written plainly: repeatedly merge the adjacent parts whose
// concatenation has the lowest rank (leftmost on ties); a piece that is a
// token is that token.
func tiktokenMergeRef(ranks map[string]int, piece string) []int {
	if id, ok := ranks[piece]; ok {
		return []int{id}
	}
	parts := make([]string, len(piece))
	for i := 0; i < len(piece); i++ {
		parts[i] = piece[i : i+1]
	}
	for {
		best, bestRank := -1, 0
		for i := 0; i+1 < len(parts); i++ {
			if r, ok := ranks[parts[i]+parts[i+1]]; ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		parts = slices.Replace(parts, best, best+2, parts[best]+parts[best+1])
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		out[i] = ranks[p]
	}
	return out
}

func TestTiktokenMergesByRank(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 1))
	toks := syntheticRanks(r)
	ranks := map[string]int{}
	for i, s := range toks {
		ranks[s] = i
	}
	// One piece per string: a pattern that never splits (no hand-written
	// matcher has it; regexp2 runs it).
	tk, err := FromTiktoken(rankFile(toks), kimiConfig(len(toks)), `(?s:.+)`, withRegexp2())
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 1000; k++ {
		var b strings.Builder
		for n := 1 + r.IntN(200); n > 0; n-- { // long pieces take the heap merge
			b.WriteString([]string{"a", "b", "c", " ", "中", "é", "x"}[r.IntN(7)])
		}
		s := b.String()
		got, want := tk.Encode(s, false), tiktokenMergeRef(ranks, s)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: got %v, want %v", s, got, want)
		}
		if d := tk.Decode(got, false); d != s {
			t.Fatalf("decode(encode(%q)) = %q", s, d)
		}
	}
}

func TestTiktokenSpecialTokens(t *testing.T) {
	toks := syntheticRanks(rand.New(rand.NewPCG(1, 2)))
	numBase := len(toks)
	tk, err := FromTiktoken(rankFile(toks), kimiConfig(numBase), KimiPattern)
	if err != nil {
		t.Fatal(err)
	}
	if tk.VocabSize() != numBase+258 {
		t.Errorf("VocabSize = %d, want ranks + 258 special slots = %d", tk.VocabSize(), numBase+258)
	}
	for name, id := range kimiSpecials(t, numBase) {
		if got, ok := tk.TokenID(name); !ok || got != id || !tk.IsSpecial(id) {
			t.Errorf("special %q: id %d %v special=%v, want %d", name, got, ok, tk.IsSpecial(id), id)
		}
	}
	text := "<|im_user|>user<|im_middle|>hi<|im_end|><|reserved_token_" + fmt.Sprint(numBase+200) + "|>[EOS]"
	ids := tk.Encode(text, true) // add_special adds nothing: no BOS for Kimi
	want := []int{numBase + 3, 'u', 's', 'e', 'r', numBase + 13, 'h', 'i', numBase + 2, numBase + 200, numBase + 1}
	if !slices.Equal(ids, want) {
		t.Fatalf("Encode(%q) = %v, want %v", text, ids, want)
	}
	if d := tk.Decode(ids, false); d != text {
		t.Errorf("Decode = %q", d)
	}
	if d := tk.Decode(ids, true); d != "userhi" {
		t.Errorf("Decode skipping special = %q", d)
	}
	if c := tk.Config(); c.BOSToken != "[BOS]" || c.EOSToken != "[EOS]" || c.PadToken != "[PAD]" {
		t.Errorf("config = %+v", c)
	}
}

// The Kimi pattern's own cases: Han runs are pieces of their own, Han is out
// of the letter classes, no '/' after punctuation (o200k takes it).
func TestKimiPatternPieces(t *testing.T) {
	initClasses()
	kimi, o200k := matchSplit{matchKimi}, matchSplit{matchO200K}
	cases := []struct {
		in   string
		want []string
	}{
		{"中文English混合", []string{"中文", "English", "混合"}},
		{"汉字abc", []string{"汉字", "abc"}},
		{"北京市 Pascal", []string{"北京市", " Pascal"}},
		{"x々〇y", []string{"x", "々〇", "y"}}, // 々 (Lm) and 〇 (Nl) are Han
		{"Hello, world!/\n", []string{"Hello", ",", " world", "!/\n"}},
		{"a+/b", []string{"a", "+/", "b"}},
		{"ab⺀cd", []string{"ab", "⺀", "cd"}}, // a Han radical (So) is a Han run
		{"'S ſ!", []string{"'S", " ſ", "!"}},
		{"CAFÉ'll 123456", []string{"CAFÉ'll", " ", "123", "456"}},
	}
	for _, c := range cases {
		if got := pieces(kimi, c.in); !slices.Equal(got, c.want) {
			t.Errorf("kimi %q = %q, want %q", c.in, got, c.want)
		}
	}
	if got := pieces(o200k, "中文English"); !slices.Equal(got, []string{"中文English"}) {
		t.Errorf("o200k keeps Han in its letter class: %q", got)
	}
	if got := pieces(o200k, "a+/\nb"); !slices.Equal(got, []string{"a", "+/\n", "b"}) {
		t.Errorf("o200k %q", got)
	}
}

func TestKimiMatcherFuzzAgainstRegexp2(t *testing.T) {
	initClasses()
	rx, err := newRegexSplit(KimiPattern)
	if err != nil {
		t.Fatal(err)
	}
	alphabet := append(slices.Clip(trickyChars), "中", "文", "々", "〇", "⺀", "𠀀", "ひ", "カ", "A", "bc")
	r := rand.New(rand.NewPCG(28, 28))
	for k := 0; k < 20000; k++ {
		s := trickyString(r, alphabet)
		if got, want := pieces(matchSplit{matchKimi}, s), pieces(rx, s); !slices.Equal(got, want) {
			t.Fatalf("%q\nhand-written %q\n     regexp2 %q", s, got, want)
		}
	}
}

func TestSplitLongText(t *testing.T) {
	collect := func(s string) []string {
		var out []string
		splitLongText(s, func(p string) { out = append(out, p) })
		return out
	}
	a := strings.Repeat("a", 25_000)
	sp := strings.Repeat(" ", 25_000)
	cases := []struct {
		in   string
		want []string
	}{
		{"", []string{""}},
		{a, []string{a}},
		{a + "a", []string{a, "a"}},
		{a + sp + "\x1c", []string{a + sp, "\x1c"}}, // Python's isspace: U+001C is a space
		{"中" + a, []string{"中" + a[1:], "a"}},       // code points, not bytes
		{sp + a + "b" + sp, []string{sp + a, "b" + sp}},
	}
	for _, c := range cases {
		if got := collect(c.in); !slices.Equal(got, c.want) {
			t.Errorf("splitLongText(%d bytes): %d parts %v, want %d %v", len(c.in), len(got), lens(got), len(c.want), lens(c.want))
		}
	}
	// Windows of 400,000 code points.
	long := strings.Repeat("ab é", 100_001)
	got := collect(long)
	if len(got) != 2 || len([]rune(got[0])) != 400_000 || got[0]+got[1] != long {
		t.Errorf("400k window: parts %v", lens(got))
	}
}

func lens(ss []string) []int {
	var out []int
	for _, s := range ss {
		out = append(out, len(s))
	}
	return out
}

// A Hugging Face cache snapshot of a Kimi repo: tiktoken.model and
// tokenizer_config.json, no tokenizer.json. Load picks the tiktoken loader.
func TestLoadTiktokenDir(t *testing.T) {
	toks := syntheticRanks(rand.New(rand.NewPCG(3, 4)))
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(TiktokenFile, rankFile(toks))
	write("tokenizer_config.json", kimiConfig(len(toks)))
	write("chat_template.jinja", []byte("{{ messages }}"))
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ids := tk.Encode("ab<|im_end|>", false); len(ids) == 0 || ids[len(ids)-1] != len(toks)+2 || tk.Config().ChatTemplate != "{{ messages }}" {
		t.Errorf("ids %v, template %q", ids, tk.Config().ChatTemplate)
	}
	write("tokenizer_config.json", []byte(`{"tokenizer_class":"SomethingElse"}`))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "split pattern") {
		t.Errorf("unknown tiktoken class: err = %v", err)
	}
	os.Remove(filepath.Join(dir, "tokenizer_config.json"))
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Errorf("no config: err = %v", err)
	}
}

func TestTiktokenBadFiles(t *testing.T) {
	cfg := kimiConfig(256)
	bytesOnly := rankFile(syntheticRanks(rand.New(rand.NewPCG(5, 6)))[:256])
	cases := map[string][]byte{
		"base64 token and its rank": []byte("YQ== 0\nnot-base64! 1\n"),
		"each once":                 append(slices.Clip(bytesOnly), "YWI= 300\n"...),
		"appears twice":             append(slices.Clip(bytesOnly), "YQ== 256\n"...),
		"lacks byte":                bytesOnly[:len(bytesOnly)-10],
	}
	for want, ranks := range cases {
		if _, err := FromTiktoken(ranks, cfg, KimiPattern); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error with %q, got %v", want, err)
		}
	}
	if _, err := FromTiktoken(bytesOnly, kimiConfig(10), KimiPattern); err == nil || !strings.Contains(err.Error(), "above the 256 ranks") {
		t.Errorf("special id inside the ranks: %v", err)
	}
}

// TestTiktokenMatchesJSTiktoken checks the loader on a real vocabulary:
// OpenAI's o200k ranks as shipped by js-tiktoken (a port of tiktoken's rank
// merge), written as a tiktoken.model, with o200k's own pattern and with
// Kimi's, and Kimi-style special tokens. Kimi's own tiktoken.model is not
// in any registry this project can reach.
func TestTiktokenMatchesJSTiktoken(t *testing.T) {
	nm := nodeModules(t)
	dir := t.TempDir()
	script := filepath.Join(repoRoot(t), "lib", "tokenizer", "testdata", "tiktoken_reference.cjs")
	node := func(args ...string) []byte {
		cmd := exec.Command("node", append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "NODE_PATH="+nm)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node %v: %v\n%s", args, err, tail(stderr.String(), 2000))
		}
		return out
	}
	rankPath := filepath.Join(dir, TiktokenFile)
	node("ranks", rankPath)
	ranks, err := os.ReadFile(rankPath)
	if err != nil {
		t.Fatal(err)
	}
	numBase := bytes.Count(ranks, []byte{'\n'})
	specials, _ := json.Marshal(kimiSpecials(t, numBase))
	specialsPath := filepath.Join(dir, "specials.json")
	if err := os.WriteFile(specialsPath, specials, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, pattern string }{{"o200k", patO200K}, {"kimi", KimiPattern}} {
		tk, err := FromTiktoken(ranks, kimiConfig(numBase), c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		// js-tiktoken's merge is quadratic in a piece's length: leave out
		// the corpus's very long strings (TestTiktokenMergesByRank covers
		// long pieces against a plain reference).
		corpus := []string{"中文English混合", "北京市 Pascal", "x々〇y ⺀𠀀 CAFÉ'll a+/b"}
		for _, s := range buildCorpus(tk, 3000) {
			if len(s) <= 1000 {
				corpus = append(corpus, s)
			}
		}
		corpusPath := filepath.Join(dir, "corpus.json")
		data, _ := json.Marshal(corpus)
		if err := os.WriteFile(corpusPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(node("encode", c.name, specialsPath, corpusPath)))
		sc.Buffer(make([]byte, 1<<20), 1<<28)
		bad, i := 0, 0
		for ; sc.Scan() && i < len(corpus); i++ {
			var want []int
			if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
				t.Fatal(err)
			}
			got := tk.Encode(corpus[i], false)
			if !slices.Equal(got, want) {
				if bad++; bad <= 3 {
					t.Errorf("%s string %d: ids differ from js-tiktoken:\n%s", c.name, i, mismatch(tk, corpus[i], got, want))
				}
			} else if d := tk.Decode(got, false); d != corpus[i] {
				if bad++; bad <= 3 {
					t.Errorf("%s string %d: decode(encode(s)) = %q", c.name, i, trunc(d))
				}
			}
		}
		if i != len(corpus) || bad > 0 {
			t.Fatalf("%s: %d of %d strings differ (%d answers)", c.name, bad, len(corpus), i)
		}
		t.Logf("%s: %d strings identical to js-tiktoken", c.name, len(corpus))
	}
}
