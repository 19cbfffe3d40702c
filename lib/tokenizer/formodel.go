package tokenizer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tinkershell/tinker/lib/hfhub"
	"github.com/tinkershell/tinker/lib/models"
)

var (
	modelMu    sync.Mutex
	modelCache map[string]*modelEntry // made by the first entry
)

type modelEntry struct {
	once sync.Once
	tok  *Tokenizer
	err  error
}

// ForModel returns the tokenizer of a Tinker base model (e.g.
// "Qwen/Qwen3-8B"): Tiny for the built-in tiny models, the directory's own
// for a model directory served under its name (models.Arch.Dir), otherwise
// one found in the Hugging Face cache or downloaded from the Hub (see
// hfhub). Tokenizers are loaded once per process and shared.
func ForModel(ctx context.Context, baseModel string) (*Tokenizer, error) {
	if models.IsTiny(baseModel) {
		return Tiny()
	}
	if a, ok := models.Lookup(baseModel); ok && a.Dir != "" {
		return forDir(a)
	}
	repo, rev := hfhub.TokenizerRefForModel(baseModel)
	return ForRepo(ctx, repo, rev)
}

// ForRepo is ForModel for a tokenizer repo id, e.g. the tokenizer_id the
// service reports in get_info. revision "" means "main". A repo with
// tiktoken.model and no tokenizer.json (Kimi K2) loads through LoadTiktoken.
func ForRepo(ctx context.Context, repoID, revision string) (*Tokenizer, error) {
	if revision == "" {
		revision = "main"
	}
	if strings.HasPrefix(repoID, "TML/") || strings.HasPrefix(repoID, "thinkingmachines/") {
		return nil, fmt.Errorf("tokenizer %s is private to Thinking Machines and cannot be loaded locally", repoID)
	}
	key := repoID + "@" + revision
	e := cacheEntry(key)
	e.once.Do(func() {
		dir, err := hfhub.FromEnv().Resolve(ctx, repoID, revision)
		if err != nil {
			e.err = err
			return
		}
		t, err := Load(dir)
		if err != nil {
			e.err = fmt.Errorf("tokenizer %s: %w", repoID, err)
			return
		}
		t.id = repoID
		e.tok = t
	})
	if e.err != nil {
		// Do not remember failures (the user may fix the cause and retry).
		modelMu.Lock()
		if modelCache[key] == e {
			delete(modelCache, key)
		}
		modelMu.Unlock()
	}
	return e.tok, e.err
}

// forDir loads a served model directory's own tokenizer, once per process:
// such a model never has another tokenizer fetched for it.
func forDir(a *models.Arch) (*Tokenizer, error) {
	e := cacheEntry("dir:" + a.Dir)
	e.once.Do(func() {
		if e.tok, e.err = Load(a.Dir); e.err != nil {
			e.err = fmt.Errorf("tokenizer of %s (%s): %w", a.Name, a.Dir, e.err)
			return
		}
		e.tok.id = a.Name
	})
	return e.tok, e.err
}

// cacheEntry is the process-wide entry for a tokenizer, made on first use.
func cacheEntry(key string) *modelEntry {
	modelMu.Lock()
	defer modelMu.Unlock()
	e, ok := modelCache[key]
	if !ok {
		if modelCache == nil {
			modelCache = map[string]*modelEntry{}
		}
		e = &modelEntry{}
		modelCache[key] = e
	}
	return e
}

// readChatTemplateFile returns dir/chat_template.jinja, where newer repos
// (gpt-oss, Qwen3.5) keep the template instead of tokenizer_config.json.
func readChatTemplateFile(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja"))
	if err != nil {
		return ""
	}
	return string(b)
}
