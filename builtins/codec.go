package builtins

import (
	"context"
	"fmt"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// rendererFor returns the chat renderer for a base model: name if given,
// else the model's default (role_colon for base models and the tiny ones).
func rendererFor(ctx context.Context, baseModel, name string) (chat.Renderer, error) {
	if name == "" {
		name = chat.ForModel(baseModel)
		if name == "" {
			return nil, fmt.Errorf("no default chat renderer for %s; pass renderer= one of %v", baseModel, chat.Names())
		}
	}
	tok, err := tokenizer.ForModel(ctx, baseModel)
	if err != nil {
		return nil, err
	}
	return chat.New(name, tok)
}
