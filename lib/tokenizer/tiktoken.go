package tokenizer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tiktoken-format vocabularies. Moonshot's Kimi K2 family ships no
// tokenizer.json: its repos hold tiktoken.model (one "base64(token) rank"
// line per token), tokenizer_config.json (the special tokens, in
// added_tokens_decoder) and tokenization_kimi.py, which encodes with
// tiktoken. tiktoken's BPE has no merge list: the adjacent pair whose
// concatenation has the lowest rank merges first (leftmost on ties), and a
// piece that is itself a token is that token. The rank is the id. We derive
// the equivalent merge table (every split of every token into two tokens,
// ranked by the whole) and reuse the byte-level BPE of tokenizer.json.

// TiktokenFile is the rank file's name in a Hugging Face repo.
const TiktokenFile = "tiktoken.model"

const (
	// kimiSpecialSlots is how many ids above the ranks tokenization_kimi.py
	// makes special tokens: those named in added_tokens_decoder keep their
	// names, the others are "<|reserved_token_ID|>".
	kimiSpecialSlots = 256 + 2
	// tokenization_kimi.py hands tiktoken at most 400,000 code points at a
	// time, cut further wherever a run of whitespace or of non-whitespace
	// would exceed 25,000 (tiktoken issue 195).
	tiktokenMaxChars = 400_000
	tiktokenMaxRun   = 25_000
	maxTiktokenRanks = 1 << 22
)

// LoadTiktoken reads a tiktoken-format tokenizer from dir: tiktoken.model,
// tokenizer_config.json (required: it lists the special tokens and names
// the tokenizer class, which fixes the split pattern) and
// chat_template.jinja if present. Load calls it for a directory that has
// tiktoken.model and no tokenizer.json.
func LoadTiktoken(dir string, opts ...Option) (*Tokenizer, error) {
	ranks, err := os.ReadFile(filepath.Join(dir, TiktokenFile))
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %s needs tokenizer_config.json beside it for its special tokens: %w", TiktokenFile, err)
	}
	pattern, err := tiktokenPattern(cfg)
	if err != nil {
		return loadedFrom(dir)(nil, err)
	}
	return loadedFrom(dir)(FromTiktoken(ranks, cfg, pattern, opts...))
}

// tiktokenPattern picks the split pattern from tokenizer_config.json: the
// pattern lives in the repo's Python code, so only known classes load.
func tiktokenPattern(cfg []byte) (string, error) {
	var c struct {
		Class   string                     `json:"tokenizer_class"`
		AutoMap map[string]json.RawMessage `json:"auto_map"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		return "", fmt.Errorf("parse tokenizer_config.json: %w", err)
	}
	if c.Class == "TikTokenTokenizer" || strings.Contains(string(c.AutoMap["AutoTokenizer"]), "tokenization_kimi.") {
		return KimiPattern, nil
	}
	return "", fmt.Errorf("%s with tokenizer class %q: its split pattern is unknown (only Kimi's TikTokenTokenizer is supported)", TiktokenFile, c.Class)
}

// FromTiktoken builds a tokenizer from the contents of a tiktoken rank file
// and tokenizer_config.json, splitting text with pattern (KimiPattern, or
// another pattern with a hand-written matcher). Special tokens are the ids named in
// added_tokens_decoder and, as tokenization_kimi.py has it, every other id
// of the 258 above the ranks as "<|reserved_token_ID|>". Text that spells a
// special token encodes to it (tokenization_kimi.py allows all special
// tokens); lstrip/rstrip are ignored, as tiktoken ignores them.
func FromTiktoken(ranks, cfgJSON []byte, pattern string, opts ...Option) (*Tokenizer, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	initClasses()
	vocab, err := parseTiktokenRanks(ranks)
	if err != nil {
		return nil, err
	}
	added, err := tiktokenSpecials(cfgJSON, len(vocab))
	if err != nil {
		return nil, err
	}
	m := &bpeModel{vocab: vocab, merges: tiktokenMerges(vocab), ignoreMerges: true}
	t, err := newTokenizer(m, added)
	if err != nil {
		return nil, err
	}
	t.buildAddedMatchers(added)
	t.splitLong = true
	if t.pre, err = splitFor(pattern, o.newSplit); err != nil {
		return nil, err
	}
	if err := t.loadConfig(cfgJSON); err != nil {
		return nil, err
	}
	return t, nil
}

// parseTiktokenRanks reads "base64 rank" lines (blank lines skipped, as
// tiktoken's load_tiktoken_bpe does). Ranks must be 0..n-1, each once.
func parseTiktokenRanks(data []byte) (map[string]int, error) {
	n := bytes.Count(data, []byte{'\n'}) + 1
	if n > maxTiktokenRanks {
		return nil, fmt.Errorf("%s has %d lines; more than %d tokens is not a tokenizer", TiktokenFile, n, maxTiktokenRanks)
	}
	vocab := make(map[string]int, n)
	for lineNo, line := range bytes.Split(data, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		tok, err := base64.StdEncoding.DecodeString(string(f[0]))
		var rank int
		if err == nil && len(f) == 2 {
			rank, err = strconv.Atoi(string(f[1]))
		}
		if err != nil || len(f) != 2 || len(tok) == 0 {
			return nil, fmt.Errorf("%s line %d: want a base64 token and its rank", TiktokenFile, lineNo+1)
		}
		if _, dup := vocab[string(tok)]; dup {
			return nil, fmt.Errorf("%s line %d: token %q appears twice", TiktokenFile, lineNo+1, tok)
		}
		vocab[string(tok)] = rank
	}
	seen := make([]bool, len(vocab))
	for tok, rank := range vocab {
		if rank < 0 || rank >= len(seen) || seen[rank] {
			return nil, fmt.Errorf("%s: token %q has rank %d; ranks must be 0..%d, each once", TiktokenFile, tok, rank, len(seen)-1)
		}
		seen[rank] = true
	}
	return vocab, nil
}

// tiktokenMerges derives the merge table: every way of writing a token as
// two tokens merges at the token's rank, into the token.
func tiktokenMerges(vocab map[string]int) map[uint64]merge {
	out := make(map[uint64]merge, 2*len(vocab))
	for tok, id := range vocab {
		for k := 1; k < len(tok); k++ {
			a, okA := vocab[tok[:k]]
			b, okB := vocab[tok[k:]]
			if okA && okB {
				out[pairKey(int32(a), int32(b))] = merge{rank: int32(id), id: int32(id)}
			}
		}
	}
	return out
}

// tiktokenSpecials lists the special tokens: added_tokens_decoder's, then
// reserved names for the unnamed ids of the slots above the ranks.
func tiktokenSpecials(cfgJSON []byte, numBase int) ([]addedTokenJSON, error) {
	var c struct {
		Decoder map[string]addedTokenJSON `json:"added_tokens_decoder"`
	}
	if len(cfgJSON) > 0 {
		if err := json.Unmarshal(cfgJSON, &c); err != nil {
			return nil, fmt.Errorf("parse tokenizer_config.json: %w", err)
		}
	}
	named := map[int]addedTokenJSON{}
	for key, a := range c.Decoder {
		id, err := strconv.Atoi(key)
		if err != nil || id < numBase || id >= numBase+maxTiktokenRanks {
			return nil, fmt.Errorf("tokenizer_config.json: added token %q has id %q; want an id above the %d ranks of %s", a.Content, key, numBase, TiktokenFile)
		}
		named[id] = addedTokenJSON{ID: id, Content: a.Content, Special: a.Special}
	}
	var out []addedTokenJSON
	for id := numBase; id < numBase+kimiSpecialSlots; id++ {
		if _, ok := named[id]; !ok {
			named[id] = addedTokenJSON{ID: id, Content: fmt.Sprintf("<|reserved_token_%d|>", id), Special: true}
		}
	}
	for _, a := range named {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// splitLongText cuts s as tokenization_kimi.py does before tiktoken sees it:
// into windows of tiktokenMaxChars code points, and inside a window before
// the code point that would make a run of whitespace (Python's isspace) or
// of non-whitespace longer than tiktokenMaxRun. Each part encodes alone.
func splitLongText(s string, emit func(string)) {
	if len(s) <= tiktokenMaxRun { // fewer bytes than the limit: nothing to cut
		emit(s)
		return
	}
	start, chars, run, space := 0, 0, 0, false
	for i := 0; i < len(s); {
		if chars == tiktokenMaxChars {
			emit(s[start:i])
			start, chars = i, 0
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		sp := pyIsSpace(r)
		switch {
		case chars == 0 || sp != space:
			run, space = 1, sp
		case run == tiktokenMaxRun:
			emit(s[start:i])
			start, run = i, 1
		default:
			run++
		}
		chars++
		i += n
	}
	emit(s[start:])
}

// pyIsSpace is Python's str.isspace for one code point: Unicode White_Space
// plus the information separators U+001C..U+001F.
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }
