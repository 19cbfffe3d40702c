package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tinkershell/tinker/lib/lazy"
)

// A preTokenizer cuts normalized text into pieces that BPE encodes
// independently. Pieces are substrings of s, so splitting allocates nothing.
type preTokenizer interface {
	split(s string, emit func(piece string))
}

// matchFunc returns the end of the match of a Split pattern that starts at
// byte offset i of s, or -1. The hand-written matchers reproduce the
// leftmost-first backtracking semantics of the regexes (as Oniguruma, the
// engine behind Hugging Face tokenizers, evaluates them), including the
// look-ahead \s+(?!\S) that Go's regexp package cannot express.
type matchFunc func(s string, i int) int

// splitIsolated implements Split with behavior "Isolated": every match is a
// piece, and so is every stretch of text between matches.
func splitIsolated(s string, m matchFunc, emit func(string)) {
	gap, i := 0, 0
	for i < len(s) {
		if e := m(s, i); e > i {
			if gap < i {
				emit(s[gap:i])
			}
			emit(s[i:e])
			i, gap = e, e
			continue
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
	}
	if gap < len(s) {
		emit(s[gap:])
	}
}

type matchSplit struct{ m matchFunc }

func (p matchSplit) split(s string, emit func(string)) { splitIsolated(s, p.m, emit) }

type sequence []preTokenizer

func (q sequence) split(s string, emit func(string)) {
	switch len(q) {
	case 0:
		emit(s)
		return
	case 1:
		q[0].split(s, emit)
		return
	}
	// Wire the stages once per call (not per piece): stage i feeds each of
	// its pieces to stage i+1, the last to emit.
	stages := make([]stage, len(q))
	next := emit
	for i := len(q) - 1; i >= 1; i-- {
		stages[i] = stage{pre: q[i], next: next}
		next = stages[i].run
	}
	q[0].split(s, next)
}

type stage struct {
	pre  preTokenizer
	next func(string)
}

func (st *stage) run(piece string) { st.pre.split(piece, st.next) }

// byteLevelPre is the ByteLevel pre-tokenizer. The byte-to-rune mapping is
// implicit (the vocabulary is keyed by raw bytes); what remains is the
// optional GPT-2 regex and prefix space.
type byteLevelPre struct {
	addPrefixSpace bool
	useRegex       bool
}

func (b byteLevelPre) split(s string, emit func(string)) {
	if b.addPrefixSpace && (len(s) == 0 || s[0] != ' ') {
		// Rare configuration: costs one allocation per section.
		s = " " + s
	}
	if b.useRegex {
		splitIsolated(s, matchGPT2, emit)
		return
	}
	emit(s)
}

// --- helpers -------------------------------------------------------------

// runWhile returns the end of the run of runes starting at i whose class
// intersects mask.
func runWhile(s string, i int, mask uint16) int {
	for i < len(s) {
		_, n, c := runeAt(s, i)
		if c&mask == 0 {
			break
		}
		i += n
	}
	return i
}

// runOther returns the end of the run of runes that are neither whitespace,
// letters nor numbers ([^\s\p{L}\p{N}]+).
func runOther(s string, i int) int {
	for i < len(s) {
		_, n, c := runeAt(s, i)
		if c&(clWS|clL|clN) != 0 {
			break
		}
		i += n
	}
	return i
}

// runBytes returns the end of the run of ASCII bytes in set.
func runBytes(s string, i int, set string) int {
	for i < len(s) {
		found := false
		for j := 0; j < len(set); j++ {
			if s[i] == set[j] {
				found = true
				break
			}
		}
		if !found {
			break
		}
		i++
	}
	return i
}

func classAt(s string, i int) uint16 {
	if i >= len(s) {
		return 0
	}
	_, _, c := runeAt(s, i)
	return c
}

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i. Case-insensitive
// matching uses Unicode case folding, as Oniguruma (HF tokenizers) does,
// so "'ſ" (U+017F LATIN SMALL LETTER LONG S) matches like "'s".
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return -1
	}
	j := i + 1
	next := byte(0)
	if j+1 < len(s) {
		next = s[j+1] | 0x20
	}
	switch s[j] | 0x20 {
	case 's', 't', 'm', 'd':
		if isASCIILetter(s[j]) {
			return j + 1
		}
	case 'r', 'v':
		if isASCIILetter(s[j]) && next == 'e' {
			return j + 2
		}
	case 'l':
		if isASCIILetter(s[j]) && next == 'l' {
			return j + 2
		}
	}
	if s[j] == 0xC5 && j+1 < len(s) && s[j+1] == 0xBF { // U+017F folds to 's'
		return j + 2
	}
	return -1
}

// caseSensitiveContraction matches 's|'t|'re|'ve|'m|'ll|'d (GPT-2).
func caseSensitiveContraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return -1
	}
	switch s[i+1] {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if i+2 < len(s) && s[i+2] == 'e' {
			return i + 3
		}
	case 'l':
		if i+2 < len(s) && s[i+2] == 'l' {
			return i + 3
		}
	}
	return -1
}

func isASCIILetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// whitespace matches \s*[\r\n]+|\s+(?!\S)|\s+ at i, where s[i] is whitespace.
func whitespace(s string, i int) int {
	j, lastNL, lastStart := i, -1, i
	for j < len(s) {
		r, n, c := runeAt(s, j)
		if c&clWS == 0 {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = j
		}
		lastStart = j
		j += n
	}
	if lastNL >= 0 { // \s*[\r\n]+ backtracks to the last line break
		return lastNL + 1
	}
	if j == len(s) || lastStart == i { // \s+(?!\S) at end of text, or \s+
		return j
	}
	return lastStart // \s+(?!\S): leave the last space to the next word
}

// --- the families' Split patterns ------------------------------------------

// Llama 3 and Qwen 2/3 (cl100k style); maxDigits is 3 for Llama, 1 for Qwen.
const (
	patLlama3  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen    = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patO200K   = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patDigits3 = `\p{N}{1,3}`
	// Qwen3.5/3.6/3.8 (248k vocabulary): Qwen's pattern with marks joining
	// letters and leaving punctuation runs.
	patQwen35 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// NVIDIA's 131k tiktoken-v2 vocabulary (Mistral's Tekken pattern), which
	// Nemotron 3 uses: o200k's without contractions, one digit at a time.
	patTekken = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// KimiPattern is the split pattern of Moonshot's tokenization_kimi.py
	// (its pat_str): o200k's with a leading Han branch, Han taken out of the
	// letter classes (Rust-regex class intersection), and no '/' after
	// punctuation.
	KimiPattern = `[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patDSCJK    = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	patDSMain   = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// handWritten are the matchers written for known split patterns, by pattern.
var handWritten = lazy.Value[map[string]matchFunc]{New: func() map[string]matchFunc {
	return map[string]matchFunc{
		patLlama3:   func(s string, i int) int { return matchCL100K(s, i, 3) },
		patQwen:     func(s string, i int) int { return matchCL100K(s, i, 1) },
		patO200K:    matchO200K,
		KimiPattern: matchKimi,
		patQwen35:   matchQwen35,
		patTekken:   matchTekken,
		patDigits3:  func(s string, i int) int { return matchNumbers(s, i, 3) },
		patDSCJK:    matchDSCJK,
		patDSMain:   matchDeepSeek,
	}
}}

func matchNumbers(s string, i, max int) int {
	j := i
	for k := 0; k < max && j < len(s); k++ {
		_, n, c := runeAt(s, j)
		if c&clN == 0 {
			break
		}
		j += n
	}
	if j == i {
		return -1
	}
	return j
}

func matchCL100K(s string, i int, maxDigits int) int {
	r, n, c := runeAt(s, i)
	if r == '\'' {
		if e := contraction(s, i); e > 0 {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c&clL != 0 {
		return runWhile(s, i, clL)
	}
	if r != '\r' && r != '\n' && c&clN == 0 && classAt(s, i+n)&clL != 0 {
		return runWhile(s, i+n, clL)
	}
	// \p{N}{1,k}
	if c&clN != 0 {
		return matchNumbers(s, i, maxDigits)
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	if r == ' ' && i+1 < len(s) && classAt(s, i+1)&(clWS|clL|clN) == 0 {
		return runBytes(s, runOther(s, i+1), "\r\n")
	}
	if c&(clWS|clL|clN) == 0 {
		return runBytes(s, runOther(s, i), "\r\n")
	}
	return whitespace(s, i)
}

const (
	o200kUpper = clLu | clLt | clLm | clLo | clM
	o200kLower = clLl | clLm | clLo | clM
)

// runExcept is runWhile for runes whose class intersects mask but not excl.
func runExcept(s string, i int, mask, excl uint16) int {
	for i < len(s) {
		_, n, c := runeAt(s, i)
		if c&mask == 0 || c&excl != 0 {
			break
		}
		i += n
	}
	return i
}

// has reports whether class c intersects mask and not excl.
func has(c, mask, excl uint16) bool { return c&mask != 0 && c&excl == 0 }

// o200kWord matches [Lu Lt Lm Lo M]*[Ll Lm Lo M]+ at p, runes of class excl
// taken out of both sets.
func o200kWord(s string, p int, excl uint16) int {
	q := runExcept(s, p, o200kUpper, excl)
	if has(classAt(s, q), o200kLower, excl) {
		return runExcept(s, q, o200kLower, excl)
	}
	// Backtrack: the upper run must give back its last "lower" rune.
	end := -1
	for k := p; k < q; {
		_, n, c := runeAt(s, k)
		if c&o200kLower != 0 {
			end = k + n
		}
		k += n
	}
	return end
}

// o200kCapital matches [Lu Lt Lm Lo M]+[Ll Lm Lo M]* at p (less excl).
func o200kCapital(s string, p int, excl uint16) int {
	if !has(classAt(s, p), o200kUpper, excl) {
		return -1
	}
	return runExcept(s, runExcept(s, p, o200kUpper, excl), o200kLower, excl)
}

func optContraction(s string, e int) int {
	if e < len(s) && s[e] == '\'' {
		if x := contraction(s, e); x > 0 {
			return x
		}
	}
	return e
}

func matchO200K(s string, i int) int { return matchO200KLike(s, i, 0, "\r\n/", true, 3) }

// matchTekken is patTekken: o200k without contractions, single digits.
func matchTekken(s string, i int) int { return matchO200KLike(s, i, 0, "\r\n/", false, 1) }

// matchQwen35 is patQwen35: the cl100k shape with [\p{L}\p{M}] for letters.
func matchQwen35(s string, i int) int {
	r, n, c := runeAt(s, i)
	if r == '\'' {
		if e := contraction(s, i); e > 0 {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ (a mark at i is a letter either way)
	if c&(clL|clM) != 0 {
		return runWhile(s, i, clL|clM)
	}
	if r != '\r' && r != '\n' && c&clN == 0 && classAt(s, i+n)&(clL|clM) != 0 {
		return runWhile(s, i+n, clL|clM)
	}
	if c&clN != 0 {
		return i + n
	}
	// ' ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*'
	const other = clWS | clL | clM | clN
	if r == ' ' && i+1 < len(s) && classAt(s, i+1)&other == 0 {
		return runBytes(s, runNot(s, i+1, other), "\r\n")
	}
	if c&other == 0 {
		return runBytes(s, runNot(s, i, other), "\r\n")
	}
	return whitespace(s, i)
}

// runNot returns the end of the run of runes whose class misses mask.
func runNot(s string, i int, mask uint16) int {
	for i < len(s) {
		_, n, c := runeAt(s, i)
		if c&mask != 0 {
			break
		}
		i += n
	}
	return i
}

// matchKimi is KimiPattern: a run of Han first, then o200k's branches with
// Han out of the letter classes and only line breaks after punctuation.
func matchKimi(s string, i int) int {
	if classAt(s, i)&clHan != 0 {
		return runWhile(s, i, clHan)
	}
	return matchO200KLike(s, i, clHan, "\r\n", true, 3)
}

// matchO200KLike is the o200k pattern with the runes of class excl taken
// out of its letter classes, punctTail the bytes ` ?[^\s\p{L}\p{N}]+`
// may be followed by, optional contractions after words when contr, and
// runs of up to digits numbers.
func matchO200KLike(s string, i int, excl uint16, punctTail string, contr bool, digits int) int {
	r, n, c := runeAt(s, i)
	lead := r != '\r' && r != '\n' && c&(clL|clN) == 0 && i+n < len(s)
	end := func(e int) int {
		if contr {
			return optContraction(s, e)
		}
		return e
	}
	for _, word := range [2]func(string, int, uint16) int{o200kWord, o200kCapital} {
		if lead {
			if e := word(s, i+n, excl); e > 0 {
				return end(e)
			}
		}
		if e := word(s, i, excl); e > 0 {
			return end(e)
		}
	}
	if c&clN != 0 {
		return matchNumbers(s, i, digits)
	}
	if r == ' ' && i+1 < len(s) && classAt(s, i+1)&(clWS|clL|clN) == 0 {
		return runBytes(s, runOther(s, i+1), punctTail)
	}
	if c&(clWS|clL|clN) == 0 {
		return runBytes(s, runOther(s, i), punctTail)
	}
	return whitespace(s, i)
}

func matchDSCJK(s string, i int) int {
	j := i
	for j < len(s) {
		r, n := utf8.DecodeRuneInString(s[j:])
		if !((r >= 0x4e00 && r <= 0x9fa5) || (r >= 0x3040 && r <= 0x309f) || (r >= 0x30a0 && r <= 0x30ff)) {
			break
		}
		j += n
	}
	if j == i {
		return -1
	}
	return j
}

func isASCIIPunct(c byte) bool {
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~')
}

func matchDeepSeek(s string, i int) int {
	r, n, c := runeAt(s, i)
	if r < utf8.RuneSelf && isASCIIPunct(byte(r)) && i+1 < len(s) && isASCIILetter(s[i+1]) {
		j := i + 1
		for j < len(s) && isASCIILetter(s[j]) {
			j++
		}
		return j
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if r != '\r' && r != '\n' && c&(clL|clP|clS) == 0 && classAt(s, i+n)&(clL|clM) != 0 {
		return runWhile(s, i+n, clL|clM)
	}
	if c&(clL|clM) != 0 {
		return runWhile(s, i, clL|clM)
	}
	// ' ?[\p{P}\p{S}]+[\r\n]*'
	if r == ' ' && classAt(s, i+1)&(clP|clS) != 0 {
		return runBytes(s, runWhile(s, i+1, clP|clS), "\r\n")
	}
	if c&(clP|clS) != 0 {
		return runBytes(s, runWhile(s, i, clP|clS), "\r\n")
	}
	if c&clWS != 0 {
		return whitespace(s, i)
	}
	return -1
}

// matchGPT2 is ByteLevel's own regex:
// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func matchGPT2(s string, i int) int {
	r, n, c := runeAt(s, i)
	if e := caseSensitiveContraction(s, i); e > 0 {
		return e
	}
	p := i
	if r == ' ' && i+1 < len(s) {
		p, c = i+n, classAt(s, i+n)
	}
	switch {
	case c&clL != 0:
		return runWhile(s, p, clL)
	case c&clN != 0:
		return runWhile(s, p, clN)
	case c&clWS == 0:
		return runOther(s, p)
	}
	// \s+(?!\S)|\s+ (no line-break rule in GPT-2's pattern)
	j, lastStart := i, i
	for j < len(s) {
		_, m, cc := runeAt(s, j)
		if cc&clWS == 0 {
			break
		}
		lastStart = j
		j += m
	}
	if j == len(s) || lastStart == i {
		return j
	}
	return lastStart
}

// --- construction from tokenizer.json ---------------------------------------

// splitFor returns the Isolated split on pattern: its hand-written
// matcher, or what newSplit makes of it when a test asks for another
// engine (withRegexp2). There is no general regex engine behind the
// matchers: regexp2, the one with look-ahead, built Unicode tables at
// every start of tinker (docs/architecture.md, "Dependencies dropped from
// the binary, and what the rest cost at init"); it is the tests' oracle
// for the matchers (regexp2_test.go).
func splitFor(pattern string, newSplit func(string) (preTokenizer, error)) (preTokenizer, error) {
	if newSplit != nil {
		return newSplit(pattern)
	}
	if m, ok := handWritten.Get()[pattern]; ok {
		return matchSplit{m}, nil
	}
	return nil, fmt.Errorf("pre_tokenizer Split: tinker has no matcher for the pattern %q (it has those of the Llama 3, Qwen, GPT-OSS, Kimi, Mistral Tekken and DeepSeek tokenizers); please report the model", pattern)
}

// literalMatch matches lit itself: a Split pattern given as a String.
func literalMatch(lit string) matchFunc {
	return func(s string, i int) int {
		if lit != "" && strings.HasPrefix(s[i:], lit) {
			return i + len(lit)
		}
		return -1
	}
}

type preTokJSON struct {
	Type           string            `json:"type"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Pattern        *patternJSON      `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace bool              `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
}

type patternJSON struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

func buildPreTokenizer(raw json.RawMessage, newSplit func(string) (preTokenizer, error)) (preTokenizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return sequence(nil), nil
	}
	var p preTokJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch p.Type {
	case "Sequence":
		var seq sequence
		for _, sub := range p.Pretokenizers {
			t, err := buildPreTokenizer(sub, newSplit)
			if err != nil {
				return nil, err
			}
			if bl, ok := t.(byteLevelPre); ok && !bl.addPrefixSpace && !bl.useRegex {
				continue // a no-op in the raw-byte representation
			}
			seq = append(seq, t)
		}
		return seq, nil
	case "Split":
		if p.Behavior != "Isolated" || p.Invert {
			return nil, fmt.Errorf("pre_tokenizer Split: behavior %q invert=%v is not supported (only Isolated)", p.Behavior, p.Invert)
		}
		if p.Pattern == nil {
			return nil, fmt.Errorf("pre_tokenizer Split: no pattern")
		}
		switch {
		case p.Pattern.Regex != nil:
			return splitFor(*p.Pattern.Regex, newSplit)
		case p.Pattern.String != nil:
			return matchSplit{literalMatch(*p.Pattern.String)}, nil
		default:
			return nil, fmt.Errorf("pre_tokenizer Split: empty pattern")
		}
	case "ByteLevel":
		useRegex := true
		if p.UseRegex != nil {
			useRegex = *p.UseRegex
		}
		return byteLevelPre{addPrefixSpace: p.AddPrefixSpace, useRegex: useRegex}, nil
	default:
		return nil, fmt.Errorf("pre_tokenizer type %q is not supported", p.Type)
	}
}
