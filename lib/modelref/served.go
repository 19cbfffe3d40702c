package modelref

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// A model directory served under its own name (--model NAME=DIR) brings its
// own tokenizer and chat template, and nothing is fetched from the Hub for
// it. In the process that serves it (tinker --local) models.Arch.Dir names
// the directory and tokenizer.ForModel reads it. A client of another tinker
// server does not know the directory: it asks that server, which serves the
// directory's tokenizer files at its Hub endpoints (lib/server/hub.go), and
// keeps them in memory only, so the user's Hugging Face cache never holds a
// models--NAME entry for a name the Hub does not have.

// servedFiles are asked for in order; only tokenizer.json is required.
var servedFiles = []string{"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}

// servedTok is a tokenizer fetched from the server that serves its model.
type servedTok struct {
	tok      *tokenizer.Tokenizer
	template string // the chat template, from either file that may hold it
}

// served holds what was fetched, by model name: training and datum
// building, which hold no session, find it here after a call that did.
var served sync.Map

// servedTokenizer fetches the tokenizer of a model outside this client's
// catalog from the server c talks to. ok is false when that server does not
// serve one (the hosted service, or a name it does not know): the caller
// then looks on the Hub as for any other model.
func servedTokenizer(ctx context.Context, c *tinkerapi.Client, name string) (*servedTok, bool, error) {
	if v, ok := served.Load(name); ok {
		return v.(*servedTok), true, nil
	}
	if _, known := models.Lookup(name); known || c == nil || !servableName(name) {
		return nil, false, nil
	}
	files := map[string][]byte{}
	for _, f := range servedFiles {
		body, err := fetchServed(ctx, c, name, f)
		if err != nil {
			return nil, false, err
		}
		if body == nil && f == servedFiles[0] {
			return nil, false, nil
		}
		files[f] = body
	}
	tok, err := tokenizer.FromFiles(files["tokenizer.json"], files["tokenizer_config.json"])
	if err != nil {
		return nil, false, nil
	}
	st := &servedTok{tok: tok, template: tok.Config().ChatTemplate}
	if st.template == "" {
		st.template = string(files["chat_template.jinja"])
	}
	served.Store(name, st)
	return st, true, nil
}

// fetchServed is one file of a served model's tokenizer, nil when the
// server has none. Only a cancelled call is an error: any other failure
// means the server serves no such file.
func fetchServed(ctx context.Context, c *tinkerapi.Client, name, file string) ([]byte, error) {
	org, repo, _ := strings.Cut(name, "/")
	path := "/" + url.PathEscape(org) + "/" + url.PathEscape(repo) + "/resolve/main/" + file
	resp, err := c.DoRaw(ctx, http.MethodGet, path, nil, tinkerapi.AllowStatus(http.StatusNotFound), tinkerapi.WithoutRetries())
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, nil
	}
	if resp.Status != http.StatusOK {
		return nil, nil
	}
	return resp.Body, nil
}

// servableName: the Hub endpoints address repos as org/name.
func servableName(name string) bool {
	org, repo, ok := strings.Cut(name, "/")
	return ok && org != "" && repo != "" && !strings.ContainsAny(repo, "/:") && org != ".." && repo != ".."
}

// dirRenderer is the default chat renderer of a model directory: the one
// its chat template speaks, or role_colon for a directory without one (a
// base model, or an export of a tiny model). "" when the template is one
// no renderer here speaks.
func dirRenderer(template string) string {
	switch {
	case template == "":
		return "role_colon"
	case strings.Contains(template, "<|start_header_id|>"):
		return "llama3"
	case strings.Contains(template, "<|im_start|>"):
		return "qwen3"
	}
	return ""
}

// defaultRenderer is the base model's default chat renderer: a model
// directory's from its own chat template, else the catalog's rule.
func defaultRenderer(ctx context.Context, base string) string {
	if v, ok := served.Load(base); ok {
		return dirRenderer(v.(*servedTok).template)
	}
	if a, ok := models.Lookup(base); ok && a.Dir != "" {
		if tok, err := tokenizer.ForModel(ctx, base); err == nil {
			return dirRenderer(tok.Config().ChatTemplate)
		}
	}
	return chat.ForModel(base)
}

// baseTokenizer is the base model's tokenizer for callers without a
// session: one fetched from a server earlier in this process, else
// tokenizer.ForModel.
func baseTokenizer(ctx context.Context, base string) (*tokenizer.Tokenizer, error) {
	if v, ok := served.Load(base); ok {
		return v.(*servedTok).tok, nil
	}
	return tokenizer.ForModel(ctx, base)
}
