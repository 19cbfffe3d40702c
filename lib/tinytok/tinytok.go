// Package tinytok is the byte-level tokenizer of the built-in tiny models
// (tinker-local/tiny-llama, tinker-local/tiny-qwen3): token i is byte i,
// then four specials. It is expressed as a Hugging Face tokenizer.json so the
// shell's tokenizer, chat renderers and decoding treat it like any other.
package tinytok

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/tinkershell/tinker/lib/tokenizer"
)

// ID names this tokenizer.
const ID = "tinker-local/bytes"

// Prefix names the built-in tiny models.
const Prefix = "tinker-local/"

// Specials, in id order from 256 (must match lib/engine's tiny vocabulary).
var Specials = []string{"<bos>", "<eos>", "<pad>", "<unk>"}

// IsTiny reports whether a base model is one of the built-in tiny models.
func IsTiny(baseModel string) bool { return strings.HasPrefix(baseModel, Prefix) }

var (
	once sync.Once
	tok  *tokenizer.Tokenizer
	err  error
)

// Tokenizer returns the shared byte-level tokenizer.
func Tokenizer() (*tokenizer.Tokenizer, error) {
	once.Do(func() { tok, err = tokenizer.FromFiles(JSON(), nil) })
	return tok, err
}

// JSON is the tokenizer.json document: a BPE model with no merges over the
// 256 ByteLevel symbols, so every byte is one token.
func JSON() []byte {
	chars := byteLevelChars()
	vocab := make(map[string]int, 256)
	for b := 0; b < 256; b++ {
		vocab[string(chars[b])] = b
	}
	added := make([]any, len(Specials))
	for i, s := range Specials {
		added[i] = map[string]any{"id": 256 + i, "content": s, "special": true}
	}
	doc := map[string]any{
		"version":       "1.0",
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"added_tokens":  added,
	}
	data, e := json.Marshal(doc)
	if e != nil {
		panic(fmt.Sprintf("tinytok: %v", e)) // static data; cannot fail
	}
	return data
}

// byteLevelChars is GPT-2's byte-to-symbol table: printable bytes map to
// themselves, the rest to code points from 256 up.
func byteLevelChars() [256]rune {
	var out [256]rune
	next := rune(256)
	for b := 0; b < 256; b++ {
		switch {
		case b >= '!' && b <= '~', b >= 0xA1 && b <= 0xAC, b >= 0xAE && b <= 0xFF:
			out[b] = rune(b)
		default:
			out[b] = next
			next++
		}
	}
	return out
}
