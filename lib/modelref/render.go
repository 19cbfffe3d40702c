package modelref

import (
	"context"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// RendererName is name if given, else the base model's default chat
// renderer (role_colon for base models and the tiny ones; a model
// directory's from its chat template).
func RendererName(base, name string) (string, error) {
	return rendererName(context.Background(), base, name)
}

func rendererName(ctx context.Context, base, name string) (string, error) {
	if name != "" {
		return name, nil
	}
	if name = defaultRenderer(ctx, base); name != "" {
		return name, nil
	}
	if err := chat.NoRenderer(base); err != nil {
		return "", err
	}
	// A model directory whose chat template no renderer here speaks.
	return "", fmt.Errorf("no default chat renderer for %s (its chat template is none tinker knows); choose one of %s", base, strings.Join(chat.Names(), ", "))
}

// Renderer is the chat renderer name (or the default) over the base
// model's tokenizer, for callers that hold no resolved Model (datum
// building, tokenize, training).
func Renderer(ctx context.Context, base, name string) (chat.Renderer, error) {
	name, err := rendererName(ctx, base, name)
	if err != nil {
		return nil, err
	}
	tok, err := baseTokenizer(ctx, base)
	if err != nil {
		return nil, err
	}
	return chat.New(name, tok)
}

// Messages renders a conversation as a prompt. Unless the caller chose
// stop conditions (stopGiven), the request stops where the renderer's
// turn ends: its stop tokens, else its stop strings.
func Messages(r chat.Renderer, msgs []chat.Message, req *tinkerapi.SampleRequest, stopGiven bool) error {
	rendered, err := r.Render(msgs)
	if err != nil {
		return err
	}
	req.PromptTokens = rendered.Tokens
	if !stopGiven {
		if len(rendered.StopTokens) > 0 {
			req.StopTokens = rendered.StopTokens
		} else {
			req.StopStrings = rendered.StopStrings
		}
	}
	return nil
}
