package tokenizer

import (
	"encoding/json"
	"fmt"

	"github.com/tinkershell/tinker/lib/lazy"
	"github.com/tinkershell/tinker/lib/models"
)

type tokenizerOrError struct {
	t   *Tokenizer
	err error
}

var tiny = lazy.Value[tokenizerOrError]{New: func() tokenizerOrError {
	t, err := FromFiles(TinyJSON(), nil)
	if err != nil {
		return tokenizerOrError{nil, fmt.Errorf("tiny tokenizer: %w", err)}
	}
	t.id = "tinker-local/bytes"
	return tokenizerOrError{t, nil}
}}

// Tiny returns the shared tokenizer of the built-in tiny models
// (lib/models), "tinker-local/bytes": token i is byte i, then
// models.TinySpecials. Encode adds no
// BOS. It is built from a tokenizer.json like any other, so the shell's
// tokenizer, chat renderers, decoding and the sampling engine treat it alike.
func Tiny() (*Tokenizer, error) { r := tiny.Get(); return r.t, r.err }

// TinyJSON is Tiny's tokenizer.json (e.g. to write a tiny model out as a
// Hugging Face model directory): a BPE model with no merges over the 256
// byte-level symbols, so every byte is one token.
func TinyJSON() []byte {
	vocab := make(map[string]int, 256)
	byteToRune := &byteLevel.Get().byteToRune
	for b := range 256 {
		vocab[string(byteToRune[b])] = b
	}
	added := make([]any, len(models.TinySpecials))
	for i, s := range models.TinySpecials {
		// Every field spelled out: Hugging Face's tokenizers library reads
		// this file too when the local server serves it (HF_ENDPOINT).
		added[i] = map[string]any{"id": models.TinyBOS + i, "content": s, "special": true,
			"single_word": false, "lstrip": false, "rstrip": false, "normalized": false}
	}
	doc := map[string]any{
		"version":       "1.0",
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"added_tokens":  added,
	}
	data, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("tiny tokenizer: %v", err)) // static data; cannot fail
	}
	return data
}
