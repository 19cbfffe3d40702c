package tokenizer

import (
	"slices"
	"testing"
)

// Special-token spellings inside text encode as text; non-special added
// tokens (Qwen's <think>) still match, as with Hugging Face's
// split_special_tokens=True.
func TestEncodeSplitSpecial(t *testing.T) {
	tk := loadFamily(t, family{"qwen3"})
	end, _ := tk.TokenID("<|im_end|>")
	think, _ := tk.TokenID("<think>")
	if tk.IsSpecial(think) || !tk.IsSpecial(end) {
		t.Fatalf("reference tokenizer changed: <think> special=%v, <|im_end|> special=%v", tk.IsSpecial(think), tk.IsSpecial(end))
	}
	got := tk.EncodeSplitSpecial("<think>a<|im_end|>b")
	if got[0] != think || slices.Contains(got, end) {
		t.Fatalf("EncodeSplitSpecial = %v (want <think> %d first and no <|im_end|> %d)", got, think, end)
	}
	if tk.Decode(got, false) != "<think>a<|im_end|>b" {
		t.Fatalf("does not round-trip: %q", tk.Decode(got, false))
	}
	if plain := tk.Encode("<think>a<|im_end|>b", false); !slices.Contains(plain, end) {
		t.Fatalf("Encode should still match the special token: %v", plain)
	}
}
