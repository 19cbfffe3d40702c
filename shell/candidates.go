package shell

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Completion from the backend: model names, run ids and tinker:// paths.
// Tab must answer at once, so a fetch is bounded in time (candidateTimeout,
// decoding included: a fetch still running then is abandoned), in count
// and in length, and its answer is kept briefly (candidateTTL): in memory
// at the prompt, in a cache file for the shells' completion (each Tab there
// is a new process).
//
// Names come from the service and end up typed into a terminal (the
// prompt's list, bash's COMPREPLY), so a name a terminal would obey (ESC,
// 8-bit CSI, BEL, bidi overrides: whatever render.Printable escapes) or
// one that cannot be typed as one word of a string literal is not offered.
const (
	candidateTimeout = 2 * time.Second
	candidateTTL     = 30 * time.Second
	candidateLimit   = 200     // runs and checkpoints asked for and kept, newest first
	candidateModels  = 1000    // model names kept from the backend's list
	candidateLen     = 512     // the longest name offered, in bytes
	candidateFileMax = 1 << 20 // the largest cache file read
)

// Candidates are the names completion offers.
type Candidates struct {
	Models []string  `json:"models"`
	Runs   []string  `json:"runs"`
	Paths  []string  `json:"paths"`
	At     time.Time `json:"at"`
}

// FetchCandidates asks the backend for its models, runs and checkpoints,
// at once, and keeps what came within candidateTimeout (or before ctx
// ended). Without a backend (or when it fails or is slow) the model names
// known to tinker are still offered.
func FetchCandidates(ctx context.Context, b builtins.Backend) Candidates {
	c := knownCandidates()
	if b == nil {
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, candidateTimeout)
	defer cancel()
	lists := []*[]string{&c.Models, &c.Runs, &c.Paths}
	got := make([]chan []string, len(lists))
	for i, fetch := range []func(context.Context, *tinkerapi.Client) []string{fetchModels, fetchRuns, fetchPaths} {
		got[i] = make(chan []string, 1)
		go func() {
			cl, err := b.Client()
			if err != nil {
				got[i] <- nil
				return
			}
			got[i] <- fetch(ctx, cl)
		}()
	}
	for i, ch := range got {
		select {
		case names := <-ch:
			s := newNameSet(len(names) + len(*lists[i]))
			s.add(*lists[i]...)
			s.add(names...)
			*lists[i] = s.list
		case <-ctx.Done():
		}
	}
	c.clean()
	return c
}

func knownCandidates() Candidates {
	return Candidates{Models: models.Names(), At: time.Now()}
}

func fetchModels(ctx context.Context, cl *tinkerapi.Client) []string {
	s := newNameSet(candidateModels)
	if caps, err := cl.GetServerCapabilities(ctx); err == nil {
		for _, m := range caps.SupportedModels {
			s.add(m.ModelName)
		}
	}
	return s.list
}

func fetchRuns(ctx context.Context, cl *tinkerapi.Client) []string {
	s := newNameSet(candidateLimit)
	if rs, err := cl.ListTrainingRuns(ctx, candidateLimit, 0, ""); err == nil {
		for _, r := range rs.TrainingRuns {
			s.add(r.TrainingRunID)
		}
	}
	return s.list
}

func fetchPaths(ctx context.Context, cl *tinkerapi.Client) []string {
	s := newNameSet(candidateLimit)
	if cks, err := cl.ListUserCheckpoints(ctx, candidateLimit, 0); err == nil {
		for _, ck := range cks.Checkpoints {
			s.add(ck.TinkerPath)
		}
	}
	return s.list
}

// nameSet collects up to max distinct offerable names, in order.
type nameSet struct {
	seen map[string]bool
	list []string
	max  int
}

func newNameSet(max int) *nameSet { return &nameSet{seen: map[string]bool{}, max: max} }

func (s *nameSet) add(names ...string) {
	for _, n := range names {
		if len(s.list) < s.max && offerable(n) && !s.seen[n] {
			s.seen[n] = true
			s.list = append(s.list, n)
		}
	}
}

// offerable: a name completion may type, as one word of a string literal
// and of a shell command line, with nothing in it a terminal would obey.
func offerable(n string) bool {
	return n != "" && len(n) <= candidateLen && render.Printable(n) == n && !strings.ContainsAny(n, " \"'\\`$")
}

// clean keeps what FetchCandidates would have kept (a cache file written
// by an older tinker may hold anything).
func (c *Candidates) clean() {
	for _, l := range []struct {
		names *[]string
		max   int
	}{{&c.Models, candidateModels}, {&c.Runs, candidateLimit}, {&c.Paths, candidateLimit}} {
		s := newNameSet(l.max)
		s.add(*l.names...)
		*l.names = s.list
	}
}

// CachedCandidates reads the candidates from the cache file when they are
// fresh, or fetches and writes them. file "" disables the file.
func CachedCandidates(ctx context.Context, b builtins.Backend, file string) Candidates {
	if c, ok := readCandidates(file); ok {
		return c
	}
	c := FetchCandidates(ctx, b)
	if file != "" {
		if data, err := json.Marshal(c); err == nil && os.MkdirAll(filepath.Dir(file), 0o700) == nil {
			// A cache: a failed write only costs a fetch.
			_ = atomicfile.Write(file, 0o600, func(w io.Writer) error { _, err := w.Write(data); return err })
		}
	}
	return c
}

// readCandidates reads a fresh cache file, at most candidateFileMax bytes.
func readCandidates(file string) (Candidates, bool) {
	var c Candidates
	f, err := os.Open(file)
	if err != nil {
		return c, false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return c, false
	}
	data, err := io.ReadAll(io.LimitReader(f, candidateFileMax+1))
	if err != nil || len(data) > candidateFileMax || json.Unmarshal(data, &c) != nil {
		return c, false
	}
	if age := time.Since(c.At); age >= candidateTTL || age < 0 {
		return c, false
	}
	c.clean()
	return c, true
}

// promptCandidates keeps the prompt's candidates for candidateTTL.
type promptCandidates struct {
	mu sync.Mutex
	c  Candidates
}

// get returns the kept candidates or fetches them; a fetch that ctx ended
// (Ctrl-C at Tab) is not kept, so the next Tab asks again.
func (p *promptCandidates) get(ctx context.Context, b builtins.Backend) Candidates {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c.At.IsZero() || time.Since(p.c.At) > candidateTTL {
		c := FetchCandidates(ctx, b)
		if ctx.Err() != nil {
			return c
		}
		p.c = c
	}
	return p.c
}
