package builtins

import (
	"context"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/train"
)

// rendererFor returns the chat renderer for a base model: name if given,
// else the model's default (role_colon for base models and the tiny ones).
func rendererFor(ctx context.Context, baseModel, name string) (chat.Renderer, error) {
	return train.RendererFor(ctx, baseModel, name)
}
