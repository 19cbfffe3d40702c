package tokenizer

import (
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// The tiny tokenizer maps each byte to its own id and the specials'
// text to their ids, and decodes without specials.
func TestTiny(t *testing.T) {
	tok, err := Tiny()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", "hello", "héllo wörld ✓ 🙂", "\x00\x01\xff tab\t\r\n", "a <eos> b"} {
		var want []int
		for i := 0; i < len(s); i++ {
			want = append(want, int(s[i]))
		}
		if s == "a <eos> b" {
			want = []int{'a', ' ', models.TinyEOS, ' ', 'b'}
		}
		got := tok.Encode(s, true)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: %v, want %v", s, got, want)
		}
		if split := tok.EncodeSplitSpecial(s); s != "a <eos> b" && !slices.Equal(split, want) {
			t.Fatalf("%q split-special: %v, want %v", s, split, want)
		}
		// DecodeBytes is exact; Decode replaces invalid UTF-8 like Hugging Face.
		if s != "a <eos> b" && string(tok.DecodeBytes(got, true)) != s {
			t.Fatalf("%q: decode %q", s, tok.DecodeBytes(got, true))
		}
	}
	ids := []int{models.TinyBOS, 'h', 0xc3, 0xa9, models.TinyEOS, models.TinyPAD}
	if got := tok.Decode(ids, true); got != "hé" {
		t.Errorf("Decode = %q (specials must be skipped)", got)
	}
	if tok.VocabSize() != models.TinyVocab || tok.ID() != "tinker-local/bytes" {
		t.Fatalf("vocab %d", tok.VocabSize())
	}
	for i, s := range models.TinySpecials {
		if id, ok := tok.TokenID(s); !ok || id != models.TinyBOS+i || !tok.IsSpecial(id) {
			t.Errorf("special %s: id %d, %v", s, id, ok)
		}
	}
}
