package builtins

import (
	"context"
	"fmt"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/tinytok"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// TokenizerFor returns the base model's tokenizer: the byte-level one for
// the built-in tiny models, otherwise the Hugging Face tokenizer found in
// the local cache or downloaded (lib/tokenizer). Loaded tokenizers are
// cached per process.
func TokenizerFor(ctx context.Context, baseModel string) (*tokenizer.Tokenizer, error) {
	if tinytok.IsTiny(baseModel) {
		return tinytok.Tokenizer()
	}
	return tokenizer.ForModel(ctx, baseModel)
}

// RendererFor returns the chat renderer for a base model: name if given,
// else the model's default (role_colon for base models and the tiny ones).
func RendererFor(ctx context.Context, baseModel, name string) (chat.Renderer, error) {
	if name == "" {
		name = chat.ForModel(baseModel)
		if tinytok.IsTiny(baseModel) {
			name = "role_colon"
		}
		if name == "" {
			return nil, fmt.Errorf("no default chat renderer for %s; pass renderer= one of %v", baseModel, chat.Names())
		}
	}
	tok, err := TokenizerFor(ctx, baseModel)
	if err != nil {
		return nil, err
	}
	return chat.New(name, tok)
}
