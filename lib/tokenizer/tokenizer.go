// Package tokenizer encodes and decodes text exactly as a Hugging Face
// byte-level BPE tokenizer (tokenizer.json) does, in pure Go: Llama 3,
// Qwen 3, DeepSeek V3 and gpt-oss; and as Kimi K2's tiktoken-format
// vocabulary (tiktoken.model) does, see tiktoken.go. Load one with Load,
// FromFiles or FromTiktoken, or by base model name with ForModel.
package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/tinkershell/tinker/lib/lazy"
)

// Tokenizer is a loaded tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	id        string
	model     *bpeModel
	tokBytes  [][]byte // id → decoded bytes (added tokens: their content)
	special   []bool   // id → is a special token (skipped by Decode when asked)
	added     map[string]int
	rawAdded  *addedMatcher // tokens matched before normalization
	normAdded *addedMatcher // tokens matched after normalization
	// plainAdded is rawAdded without the special tokens, for
	// EncodeSplitSpecial.
	plainAdded *addedMatcher
	normalize  normalizer
	pre        preTokenizer
	prefix     []int // post-processor ids before the text (BOS)
	suffix     []int // and after it (EOS)
	config     Config
	splitLong  bool // cut long texts first, as tokenization_kimi.py does (splitLongText)
}

// Config holds the parts of tokenizer_config.json that callers need.
type Config struct {
	BOSToken       string // e.g. "<|begin_of_text|>"; "" when none
	EOSToken       string
	PadToken       string
	ChatTemplate   string // the default Jinja chat template, if any
	TokenizerClass string
	// CleanUpSpaces is clean_up_tokenization_spaces: Python transformers'
	// decode() then applies CleanUpTokenizationSpaces (Llama 3 sets it).
	CleanUpSpaces bool
}

// Option adjusts how a tokenizer is built.
type Option func(*options)

// options.newSplit, when set, makes every Split pattern's pre-tokenizer
// instead of the hand-written matchers (the tests' withRegexp2).
type options struct {
	newSplit func(pattern string) (preTokenizer, error)
}

// Load reads tokenizer.json and (if present) tokenizer_config.json from dir;
// a directory with tiktoken.model and no tokenizer.json (Kimi K2) loads with
// LoadTiktoken.
func Load(dir string, opts ...Option) (*Tokenizer, error) {
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if os.IsNotExist(err) {
		if _, terr := os.Stat(filepath.Join(dir, TiktokenFile)); terr == nil {
			return LoadTiktoken(dir, opts...)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	cj, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	return loadedFrom(dir)(FromFiles(tj, cj, opts...))
}

// loadedFrom finishes Load and LoadTiktoken: the tokenizer is named by its
// directory, and takes chat_template.jinja when its config has no template.
func loadedFrom(dir string) func(*Tokenizer, error) (*Tokenizer, error) {
	return func(t *Tokenizer, err error) (*Tokenizer, error) {
		if err != nil {
			return nil, fmt.Errorf("load tokenizer from %s: %w", dir, err)
		}
		t.id = dir
		if t.config.ChatTemplate == "" {
			t.config.ChatTemplate = readChatTemplateFile(dir)
		}
		return t, nil
	}
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	Special    bool   `json:"special"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	SingleWord bool   `json:"single_word"`
}

// tokenizerJSON holds the small members of tokenizer.json; the model's
// vocabulary and merges are scanned by hand (see jsonscan.go).
type tokenizerJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
}

type modelJSON struct {
	Type         string
	IgnoreMerges bool
	Prefix       string // continuing_subword_prefix
	Suffix       string // end_of_word_suffix
	ByteFallback bool
	vocab        map[string]int // raw bytes → id
	merges       [][2]string    // byte-level strings
}

// parseTokenizerJSON scans tokenizer.json.
func parseTokenizerJSON(data []byte) (tokenizerJSON, modelJSON, error) {
	var tj tokenizerJSON
	var m modelJSON
	small := map[string]json.RawMessage{}
	s := &scanner{b: data}
	err := s.object(func(key string) error {
		if key != "model" {
			raw, err := s.skip()
			small[key] = raw
			return err
		}
		return s.object(func(k string) error {
			switch k {
			case "vocab":
				m.vocab = make(map[string]int, len(data)/60)
				return s.object(func(tok string) error {
					id, err := s.integer()
					m.vocab[byteLevelString(tok)] = id
					return err
				})
			case "merges":
				m.merges = make([][2]string, 0, len(data)/40)
				return s.array(func() error {
					if s.peek() == '[' {
						var pair [2]string
						n := 0
						err := s.array(func() error {
							v, err := s.str()
							if n < 2 {
								pair[n] = v
							}
							n++
							return err
						})
						if err == nil && n != 2 {
							err = s.errorf("merge %d has %d parts", len(m.merges), n)
						}
						m.merges = append(m.merges, pair)
						return err
					}
					v, err := s.str()
					if err != nil {
						return err
					}
					a, b, ok := strings.Cut(v, " ")
					if !ok {
						return s.errorf("merge %q has no space", v)
					}
					m.merges = append(m.merges, [2]string{a, b})
					return nil
				})
			}
			raw, err := s.skip()
			if err != nil {
				return err
			}
			var dst any
			switch k {
			case "type":
				dst = &m.Type
			case "ignore_merges":
				dst = &m.IgnoreMerges
			case "continuing_subword_prefix":
				dst = &m.Prefix
			case "end_of_word_suffix":
				dst = &m.Suffix
			case "byte_fallback":
				dst = &m.ByteFallback
			default:
				return nil
			}
			if string(raw) == "null" {
				return nil
			}
			if err := json.Unmarshal(raw, dst); err != nil {
				return fmt.Errorf("model.%s: %w", k, err)
			}
			return nil
		})
	})
	if err != nil {
		return tj, m, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	for k, dst := range map[string]any{"added_tokens": &tj.AddedTokens} {
		if raw, ok := small[k]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return tj, m, fmt.Errorf("parse tokenizer.json %s: %w", k, err)
			}
		}
	}
	tj.Normalizer, tj.PreTokenizer = small["normalizer"], small["pre_tokenizer"]
	tj.PostProcessor, tj.Decoder = small["post_processor"], small["decoder"]
	return tj, m, nil
}

// FromFiles builds a tokenizer from the contents of tokenizer.json and
// tokenizer_config.json (cfgJSON may be nil).
func FromFiles(tokJSON, cfgJSON []byte, opts ...Option) (*Tokenizer, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	initClasses()
	tj, mj, err := parseTokenizerJSON(tokJSON)
	if err != nil {
		return nil, err
	}
	if mj.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer model %q is not supported (only byte-level BPE)", mj.Type)
	}
	if mj.Prefix != "" || mj.Suffix != "" {
		return nil, fmt.Errorf("BPE with subword prefixes/suffixes is not supported")
	}
	if err := checkByteLevelDecoder(tj.Decoder); err != nil {
		return nil, err
	}
	m := &bpeModel{vocab: mj.vocab, ignoreMerges: mj.IgnoreMerges}
	t, err := newTokenizer(m, tj.AddedTokens)
	if err != nil {
		return nil, err
	}
	if err := t.loadMerges(mj.merges); err != nil {
		return nil, err
	}
	if t.normalize, err = buildNormalizer(tj.Normalizer); err != nil {
		return nil, err
	}
	t.buildAddedMatchers(tj.AddedTokens)
	if t.pre, err = buildPreTokenizer(tj.PreTokenizer, o.newSplit); err != nil {
		return nil, err
	}
	if err := t.loadPostProcessor(tj.PostProcessor); err != nil {
		return nil, err
	}
	if len(cfgJSON) > 0 {
		if err := t.loadConfig(cfgJSON); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// newTokenizer builds the id tables of a byte-level vocabulary (raw bytes →
// id) and its added tokens; merges, normalizer and pre-tokenizer come later.
func newTokenizer(m *bpeModel, added []addedTokenJSON) (*Tokenizer, error) {
	t := &Tokenizer{added: map[string]int{}, model: m}
	maxID := -1
	for _, id := range m.vocab {
		maxID = max(maxID, id)
	}
	for _, a := range added {
		maxID = max(maxID, a.ID)
	}
	t.tokBytes = make([][]byte, maxID+1)
	t.special = make([]bool, maxID+1)
	for s, id := range m.vocab {
		if id < 0 {
			return nil, fmt.Errorf("vocab entry %q has negative id", s)
		}
		// Share the key's bytes; neither side is ever modified.
		t.tokBytes[id] = unsafe.Slice(unsafe.StringData(s), len(s))
	}
	for i := range m.byteID {
		id, ok := m.vocab[string([]byte{byte(i)})]
		if !ok {
			return nil, fmt.Errorf("byte-level vocabulary lacks byte 0x%02x", i)
		}
		m.byteID[i] = int32(id)
	}
	for _, a := range added {
		if a.ID < 0 {
			return nil, fmt.Errorf("added token %q has negative id", a.Content)
		}
		if a.SingleWord {
			return nil, fmt.Errorf("added token %q: single_word is not supported", a.Content)
		}
		t.added[a.Content] = a.ID
		t.tokBytes[a.ID] = []byte(a.Content)
		t.special[a.ID] = a.Special
	}
	return t, nil
}

// buildAddedMatchers sets up matching of the added tokens in text; call it
// once the normalizer is known.
func (t *Tokenizer) buildAddedMatchers(added []addedTokenJSON) {
	var raw, normed []*addedToken
	for _, a := range added {
		at := &addedToken{id: a.ID, content: a.Content, special: a.Special, lstrip: a.LStrip, rstrip: a.RStrip}
		// Hugging Face matches special and non-normalized tokens on the raw
		// text, the rest after normalization.
		if a.Special || !a.Normalized {
			raw = append(raw, at)
		} else {
			normed = append(normed, at)
		}
	}
	if t.normalize == nil { // both sets match the same text
		raw, normed = append(raw, normed...), nil
	}
	t.rawAdded, t.normAdded = newAddedMatcher(raw), newAddedMatcher(normed)
	t.plainAdded = newAddedMatcher(notSpecial(raw))
}

func (t *Tokenizer) loadMerges(pairs [][2]string) error {
	m := t.model
	// Resolving ~3 vocabulary lookups per merge dominates loading; the map
	// is only read here, so split the work across CPUs.
	type resolved struct{ a, b, id int32 }
	res := make([]resolved, len(pairs))
	workers := min(runtime.GOMAXPROCS(0), 8)
	chunk := (len(pairs) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min(len(pairs), (w+1)*chunk)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			var buf []byte
			for rank := lo; rank < hi; rank++ {
				p := pairs[rank]
				a, b := byteLevelString(p[0]), byteLevelString(p[1])
				ia, oka := m.vocab[a]
				ib, okb := m.vocab[b]
				buf = append(append(buf[:0], a...), b...)
				im, okm := m.vocab[string(buf)]
				if !oka || !okb || !okm {
					errs[w] = fmt.Errorf("merge %d (%q %q) refers to tokens missing from the vocabulary", rank, p[0], p[1])
					return
				}
				res[rank] = resolved{int32(ia), int32(ib), int32(im)}
			}
		}(w, lo, hi)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	m.merges = make(map[uint64]merge, len(pairs))
	for rank, r := range res {
		k := pairKey(r.a, r.b)
		if _, dup := m.merges[k]; !dup { // the first (lowest) rank wins
			m.merges[k] = merge{rank: int32(rank), id: r.id}
		}
	}
	return nil
}

func checkByteLevelDecoder(raw json.RawMessage) error {
	var d struct {
		Type     string            `json:"type"`
		Decoders []json.RawMessage `json:"decoders"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	switch d.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for _, sub := range d.Decoders {
			if checkByteLevelDecoder(sub) == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("decoder %q is not supported (only ByteLevel)", d.Type)
}

type postJSON struct {
	Type       string            `json:"type"`
	Processors []json.RawMessage `json:"processors"`
	Single     []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
}

func (t *Tokenizer) loadPostProcessor(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var p postJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("post_processor: %w", err)
	}
	switch p.Type {
	case "ByteLevel": // offsets only
		return nil
	case "Sequence":
		for _, sub := range p.Processors {
			if err := t.loadPostProcessor(sub); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		t.prefix, t.suffix = nil, nil
		seen := false
		for _, piece := range p.Single {
			switch {
			case piece.Sequence != nil:
				seen = true
			case piece.SpecialToken != nil:
				st, ok := p.SpecialTokens[piece.SpecialToken.ID]
				if !ok {
					return fmt.Errorf("post_processor: unknown special token %q", piece.SpecialToken.ID)
				}
				if seen {
					t.suffix = append(t.suffix, st.IDs...)
				} else {
					t.prefix = append(t.prefix, st.IDs...)
				}
			}
		}
		return nil
	default:
		return fmt.Errorf("post_processor type %q is not supported", p.Type)
	}
}

// tokenString accepts a token given as a string or as an AddedToken object.
type tokenString string

func (s *tokenString) UnmarshalJSON(b []byte) error {
	var str string
	if json.Unmarshal(b, &str) == nil {
		*s = tokenString(str)
		return nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*s = tokenString(obj.Content)
	return nil
}

func (t *Tokenizer) loadConfig(raw []byte) error {
	var c struct {
		BOS            tokenString     `json:"bos_token"`
		EOS            tokenString     `json:"eos_token"`
		Pad            tokenString     `json:"pad_token"`
		ChatTemplate   json.RawMessage `json:"chat_template"`
		TokenizerClass string          `json:"tokenizer_class"`
		AddBOS         *bool           `json:"add_bos_token"`
		AddEOS         *bool           `json:"add_eos_token"`
		CleanUp        *bool           `json:"clean_up_tokenization_spaces"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("parse tokenizer_config.json: %w", err)
	}
	t.config = Config{BOSToken: string(c.BOS), EOSToken: string(c.EOS), PadToken: string(c.Pad), TokenizerClass: c.TokenizerClass}
	// transformers' default is true when the key is absent.
	t.config.CleanUpSpaces = c.CleanUp == nil || *c.CleanUp
	if len(c.ChatTemplate) > 0 {
		var s string
		var named []struct{ Name, Template string }
		if json.Unmarshal(c.ChatTemplate, &s) == nil {
			t.config.ChatTemplate = s
		} else if json.Unmarshal(c.ChatTemplate, &named) == nil {
			for _, n := range named {
				if n.Name == "default" {
					t.config.ChatTemplate = n.Template
				}
			}
		}
	}
	// transformers' LlamaTokenizerFast rebuilds the post-processor from
	// add_bos_token (default true) and add_eos_token (default false), whatever
	// tokenizer.json says; DeepSeek V3 relies on this for its BOS.
	if c.TokenizerClass == "LlamaTokenizerFast" || c.TokenizerClass == "LlamaTokenizer" {
		addBOS, addEOS := true, false
		if c.AddBOS != nil {
			addBOS = *c.AddBOS
		}
		if c.AddEOS != nil {
			addEOS = *c.AddEOS
		}
		t.prefix, t.suffix = nil, nil
		if id, ok := t.TokenID(string(c.BOS)); ok && addBOS && c.BOS != "" {
			t.prefix = []int{id}
		}
		if id, ok := t.TokenID(string(c.EOS)); ok && addEOS && c.EOS != "" {
			t.suffix = []int{id}
		}
	}
	return nil
}

// ID is the tokenizer's name: the Hugging Face repo id when loaded by
// ForModel, else the directory it was loaded from.
func (t *Tokenizer) ID() string { return t.id }

// Config returns the settings read from tokenizer_config.json.
func (t *Tokenizer) Config() Config { return t.config }

// VocabSize is the number of token ids, added tokens included (the size of
// the model's embedding table for these families, e.g. 128256 for Llama 3).
func (t *Tokenizer) VocabSize() int { return len(t.tokBytes) }

// TokenID returns the id of a token given by its text: an added/special token
// such as "<|eot_id|>", or a vocabulary entry such as " the".
func (t *Tokenizer) TokenID(s string) (int, bool) {
	if id, ok := t.added[s]; ok {
		return id, true
	}
	id, ok := t.model.vocab[s]
	return id, ok
}

// TokenBytes returns the bytes id decodes to (nil for an unknown id).
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.tokBytes) {
		return nil
	}
	return t.tokBytes[id]
}

// IsSpecial reports whether id is a special token.
func (t *Tokenizer) IsSpecial(id int) bool { return id >= 0 && id < len(t.special) && t.special[id] }

// Encode returns the token ids of text. Text that spells an added or special
// token (e.g. "<|eot_id|>") becomes that token, as in Hugging Face.
// addSpecial adds what the post-processor adds (Llama 3's BOS; Qwen: none).
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	out := make([]int, 0, len(text)/3+len(t.prefix)+len(t.suffix)+1)
	return t.AppendEncode(out, text, addSpecial)
}

// AppendEncode is Encode appending to dst, for callers that reuse buffers.
func (t *Tokenizer) AppendEncode(dst []int, text string, addSpecial bool) []int {
	if addSpecial {
		dst = append(dst, t.prefix...)
	}
	e := encoder{t: t, out: dst}
	e.run(text)
	dst = e.out
	if addSpecial {
		dst = append(dst, t.suffix...)
	}
	return dst
}

// encoder carries the output slice through the callbacks of one Encode call.
type encoder struct {
	t   *Tokenizer
	out []int
}

func (e *encoder) run(text string) {
	if e.t.splitLong {
		splitLongText(text, e.section)
		return
	}
	e.section(text)
}

func (e *encoder) section(s string) { e.t.rawAdded.splitAdded(s, e.plain, e.token) }

func (e *encoder) token(a *addedToken) { e.out = append(e.out, a.id) }

func (e *encoder) plain(s string) {
	if e.t.normalize != nil {
		s = e.t.normalize(s)
		e.t.normAdded.splitAdded(s, e.words, e.token)
		return
	}
	e.words(s)
}

func (e *encoder) words(s string) {
	e.t.pre.split(s, e.piece)
}

func (e *encoder) piece(p string) { e.out = e.t.model.encode(p, e.out) }

// Decode returns the text of ids. Bytes that do not form complete UTF-8
// (e.g. a prefix of a generation cut inside a character) come out as U+FFFD.
// Unknown ids are ignored, as in Hugging Face.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	return ValidUTF8(t.DecodeBytes(ids, skipSpecial))
}

// cleanUpReplacer undoes the spaces word-level tokenizers put before
// punctuation and contractions, like transformers' clean_up_tokenization.
var cleanUpReplacer = lazy.Value[*strings.Replacer]{New: func() *strings.Replacer {
	return strings.NewReplacer(" .", ".", " ?", "?", " !", "!", " ,", ",", " ' ", "'",
		" n't", "n't", " 'm", "'m", " 's", "'s", " 've", "'ve", " 're", "'re")
}}

// CleanUpTokenizationSpaces applies transformers' clean-up of decoded text
// (" ," → "," and so on). Python's tokenizer.decode does this when
// Config().CleanUpSpaces is set; Decode never does, so that decoding
// reverses encoding exactly.
func CleanUpTokenizationSpaces(s string) string { return cleanUpReplacer.Get().Replace(s) }

// DecodeBytes returns the raw bytes of ids.
func (t *Tokenizer) DecodeBytes(ids []int, skipSpecial bool) []byte {
	out := make([]byte, 0, len(ids)*4)
	for _, id := range ids {
		out = t.appendBytes(out, id, skipSpecial)
	}
	return out
}

func (t *Tokenizer) appendBytes(out []byte, id int, skipSpecial bool) []byte {
	if id < 0 || id >= len(t.tokBytes) || (skipSpecial && t.special[id]) {
		return out
	}
	return append(out, t.tokBytes[id]...)
}

// normalizeText returns text as the model sees it: normalized outside added
// tokens. decode(encode(s)) == normalizeText(s) (Qwen applies NFC).
func (t *Tokenizer) normalizeText(text string) string {
	if t.normalize == nil {
		return text
	}
	var b strings.Builder
	t.rawAdded.splitAdded(text, func(s string) { b.WriteString(t.normalize(s)) }, func(a *addedToken) { b.WriteString(a.content) })
	return b.String()
}
