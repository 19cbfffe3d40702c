package tinytok

import (
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
)

// The shell's view of the tiny tokenizer must agree with the engine's.
func TestMatchesEngine(t *testing.T) {
	tok, err := Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	var eng engine.ByteTokenizer
	for _, s := range []string{"", "hello", "héllo wörld ✓ 🙂", "\x00\x01\xff tab\t\r\n", "a <eos> b"} {
		got := tok.Encode(s, false)
		want := eng.Encode(s)
		if s == "a <eos> b" {
			want = []int{'a', ' ', engine.TinyEOS, ' ', 'b'}
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %v, want %v", s, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%q: %v, want %v", s, got, want)
			}
		}
		// DecodeBytes is exact; Decode replaces invalid UTF-8 like Hugging Face.
		if s != "a <eos> b" && string(tok.DecodeBytes(got, true)) != s {
			t.Fatalf("%q: decode %q", s, tok.DecodeBytes(got, true))
		}
	}
	if tok.VocabSize() != 260 || engine.TinyEOS != 257 {
		t.Fatalf("vocab %d", tok.VocabSize())
	}
}
