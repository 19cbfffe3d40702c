package engine

import "strings"

// Special token ids of the tiny models' byte-level vocabulary (lib/models:
// 256 byte tokens + 4 specials).
const (
	TinyBOS = 256
	TinyEOS = 257
	TinyPAD = 258
	TinyUNK = 259
)

var tinySpecials = [...]string{"<bos>", "<eos>", "<pad>", "<unk>"}

// Tokenizer turns text into token ids and back.
type Tokenizer interface {
	Encode(text string) []int
	Decode(ids []int) string
}

// ByteTokenizer is the tiny models' tokenizer: one token per byte of the
// UTF-8 text, ids 0-255, plus the specials above. Encode adds no BOS (like
// Qwen tokenizers); callers that want one prepend TinyBOS.
type ByteTokenizer struct{}

// Encode returns the bytes of text as token ids.
func (ByteTokenizer) Encode(text string) []int {
	ids := make([]int, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int(text[i])
	}
	return ids
}

// Decode concatenates the bytes of byte tokens and skips special tokens (as
// the service's detokenization of sampled output does). The result may hold
// invalid UTF-8 when a multi-byte character is cut; it is the raw bytes.
func (ByteTokenizer) Decode(ids []int) string {
	var b strings.Builder
	b.Grow(len(ids))
	for _, id := range ids {
		if id >= 0 && id < 256 {
			b.WriteByte(byte(id))
		}
	}
	return b.String()
}

// TokenText returns the text of one token: its byte, or a special's name
// such as "<eos>".
func (ByteTokenizer) TokenText(id int) string {
	switch {
	case id >= 0 && id < 256:
		return string([]byte{byte(id)})
	case id >= 256 && id < 256+len(tinySpecials):
		return tinySpecials[id-256]
	}
	return ""
}

// SpecialTokens maps the specials' names to ids.
func (ByteTokenizer) SpecialTokens() map[string]int {
	m := map[string]int{}
	for i, s := range tinySpecials {
		m[s] = 256 + i
	}
	return m
}
