package modelref

import (
	"context"
	"fmt"
	"strings"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// Model is a resolved sampling target.
type Model struct {
	Name string // as the caller gave it
	Base string // the base model: the tokenizer's and renderer's
	Path string // the tinker:// sampler path, or "" for a base model
	Tok  *tokenizer.Tokenizer
	// TokErr says why Tok is nil; only prompts given as text or messages
	// need a tokenizer, so it is reported when one is needed.
	TokErr error
}

// Resolve resolves a base model name or a tinker:// sampler path. A
// training checkpoint (weights/) is refused: only sampler weights sample.
// Errors are the client's or *tinkerapi.UserError, unwrapped, so that
// each caller words them in its own context.
func Resolve(ctx context.Context, s *tinkerapi.Session, name string) (*Model, error) {
	m := &Model{Name: name, Base: name}
	if strings.HasPrefix(name, "tinker://") {
		p, err := tinkerapi.ParseArg(name)
		if err != nil {
			return nil, err
		}
		if p.Kind != "sampler_weights" {
			return nil, &tinkerapi.UserError{Msg: fmt.Sprintf("%s is a training checkpoint (weights/); save sampler weights first and sample its sampler_weights/ path", name)}
		}
		info, err := s.Client().WeightsInfo(ctx, name)
		if err != nil {
			return nil, err
		}
		m.Base, m.Path = info.BaseModel, name
	}
	m.Tok, m.TokErr = TokenizerFor(ctx, s, m.Base, m.Path)
	return m, nil
}

// SessionBase is the base model a sampling session is created with: none
// for a checkpoint, which is addressed by its path alone.
func (m *Model) SessionBase() string {
	if m.Path != "" {
		return ""
	}
	return m.Base
}

// Key names the model's sampling session among others of one Tinker session.
func (m *Model) Key() string {
	if m.Path != "" {
		return m.Path
	}
	return m.Base
}

// Tokenizer is the model's tokenizer, or why there is none.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) {
	if m.Tok == nil {
		return nil, unavailable(m.Base, m.Path, m.TokErr)
	}
	return m.Tok, nil
}

// Renderer is the chat renderer name (or the base model's default) over
// the model's own tokenizer.
func (m *Model) Renderer(name string) (chat.Renderer, error) {
	name, err := rendererName(context.Background(), m.Base, name)
	if err != nil {
		return nil, err
	}
	tok, err := m.Tokenizer()
	if err != nil {
		return nil, err
	}
	return chat.New(name, tok)
}

// Decode is the text of generated tokens, or "" without a tokenizer.
func (m *Model) Decode(toks []int) string {
	if m.Tok == nil {
		return ""
	}
	return m.Tok.Decode(toks, true)
}

// TokenizerFor finds a model's tokenizer the way the SDK does: for a
// checkpoint (path set), the one the service names for its training run,
// else the one known for the base model's name. A base model outside the
// catalog may be a model directory the server serves under that name: its
// own tokenizer comes from that server (served.go).
func TokenizerFor(ctx context.Context, s *tinkerapi.Session, base, path string) (*tokenizer.Tokenizer, error) {
	if a, ok := models.Lookup(base); ok && a.Dir != "" {
		return tokenizer.ForModel(ctx, base) // served here: its directory's own
	}
	if s != nil {
		st, ok, err := servedTokenizer(ctx, s.Client(), base)
		if err != nil {
			return nil, err
		}
		if ok {
			return st.tok, nil
		}
	}
	if path != "" && !models.IsTiny(base) {
		if p, err := tinkerapi.ParsePath(path); err == nil {
			if info, err := s.GetInfo(ctx, p.RunID); err == nil {
				if id := info.ModelData.Tokenizer(); id != "" {
					if tok, err := tokenizer.ForRepo(ctx, id, ""); err == nil {
						return tok, nil
					}
				}
			}
		}
	}
	return tokenizer.ForModel(ctx, base)
}
