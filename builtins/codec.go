package builtins

import (
	"context"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/modelref"
)

// rendererFor returns the chat renderer for a base model: name if given,
// else the model's default (modelref.Renderer).
func rendererFor(ctx context.Context, baseModel, name string) (chat.Renderer, error) {
	return modelref.Renderer(ctx, baseModel, name)
}
