package engine

import (
	"context"
	"fmt"
)

func ExampleModel_Sample() {
	m, err := Load("tinker-local/tiny-llama")
	if err != nil {
		panic(err)
	}
	seed := int64(1)
	resp, err := m.Sample(context.Background(), SampleRequest{
		Prompt:      m.Tokenizer().Encode("Hello", true),
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
