package shell

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/models"
)

// Completion from the backend: model names, run ids and tinker:// paths.
// Tab must answer at once, so a fetch is bounded (candidateTimeout) and
// its answer is kept briefly (candidateTTL): in memory at the prompt, in a
// cache file for the shells' completion (each Tab there is a new process).
const (
	candidateTimeout = 2 * time.Second
	candidateTTL     = 30 * time.Second
	candidateLimit   = 200 // runs and checkpoints asked for, newest first
)

// Candidates are the names completion offers.
type Candidates struct {
	Models []string  `json:"models"`
	Runs   []string  `json:"runs"`
	Paths  []string  `json:"paths"`
	At     time.Time `json:"at"`
}

// FetchCandidates asks the backend for its models, runs and checkpoints,
// within candidateTimeout. Without a backend (or when it fails) the model
// names known to tinker are still offered.
func FetchCandidates(ctx context.Context, b builtins.Backend) Candidates {
	c := Candidates{Models: models.Names(), At: time.Now()}
	if b == nil {
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, candidateTimeout)
	defer cancel()
	cl, err := b.Client()
	if err != nil {
		return c
	}
	if caps, err := cl.GetServerCapabilities(ctx); err == nil {
		for _, m := range caps.SupportedModels {
			if !slices.Contains(c.Models, m.ModelName) {
				c.Models = append(c.Models, m.ModelName)
			}
		}
	}
	if runs, err := cl.ListTrainingRuns(ctx, candidateLimit, 0, ""); err == nil {
		for _, r := range runs.TrainingRuns {
			c.Runs = append(c.Runs, r.TrainingRunID)
		}
	}
	if cks, err := cl.ListUserCheckpoints(ctx, candidateLimit, 0); err == nil {
		for _, ck := range cks.Checkpoints {
			c.Paths = append(c.Paths, ck.TinkerPath)
		}
	}
	return c
}

// CachedCandidates reads the candidates from the cache file when they are
// fresh, or fetches and writes them. file "" disables the file.
func CachedCandidates(ctx context.Context, b builtins.Backend, file string) Candidates {
	var c Candidates
	if data, err := os.ReadFile(file); err == nil && json.Unmarshal(data, &c) == nil && time.Since(c.At) < candidateTTL && time.Since(c.At) >= 0 {
		return c
	}
	c = FetchCandidates(ctx, b)
	if file != "" {
		if data, err := json.Marshal(c); err == nil && os.MkdirAll(filepath.Dir(file), 0o700) == nil {
			tmp := file + ".tmp"
			if os.WriteFile(tmp, data, 0o600) == nil {
				os.Rename(tmp, file)
			}
		}
	}
	return c
}

// promptCandidates keeps the prompt's candidates for candidateTTL.
type promptCandidates struct {
	mu sync.Mutex
	c  Candidates
}

func (p *promptCandidates) get(b builtins.Backend) Candidates {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c.At.IsZero() || time.Since(p.c.At) > candidateTTL {
		p.c = FetchCandidates(context.Background(), b)
	}
	return p.c
}
