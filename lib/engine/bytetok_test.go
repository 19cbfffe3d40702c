package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

func TestByteTokenizer(t *testing.T) {
	var tok ByteTokenizer
	ids := tok.Encode("héllo\n")
	if !slices.Equal(ids, []int{'h', 0xc3, 0xa9, 'l', 'l', 'o', '\n'}) {
		t.Errorf("Encode = %v", ids)
	}
	if got := tok.Decode(append([]int{TinyBOS}, append(ids, TinyEOS, TinyPAD)...)); got != "héllo\n" {
		t.Errorf("Decode = %q (specials must be skipped)", got)
	}
	if tok.TokenText(TinyEOS) != "<eos>" || tok.TokenText('a') != "a" || tok.SpecialTokens()["<unk>"] != TinyUNK {
		t.Error("special token names")
	}
}

func ExampleModel_Sample() {
	m, err := Load("tinker-local/tiny-llama")
	if err != nil {
		panic(err)
	}
	seed := int64(1)
	resp, err := m.Sample(context.Background(), SampleRequest{
		Prompt:      m.Tokenizer().Encode("Hello"),
		MaxTokens:   8,
		Temperature: 1,
		Seed:        &seed,
		StopStrings: []string{"\n"},
	})
	if err != nil {
		panic(err)
	}
	s := resp.Sequences[0]
	fmt.Println(len(s.Tokens), len(s.Logprobs), s.StopReason)
	// Output: 8 8 length
}
