package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tinkershell/tinker/builtins"
	"github.com/tinkershell/tinker/lib/term"
	"github.com/tinkershell/tinker/shell"
)

// completeWord is the hidden command the completion scripts run for the
// names only the backend knows: tinker __complete models|runs|paths prints
// them one a line. Bounded in time and cached briefly (shell.CachedCandidates),
// so a Tab never hangs on a slow service; it never prints an error.
const completeWord = "__complete"

func runDynamicCompletion(io *term.IO, opts options, args []string, now func() time.Time) int {
	if len(args) != 1 {
		return shell.ExitUsage
	}
	var b builtins.Backend
	name := "none"
	if opts.applyProfile() != nil {
		opts = options{} // a broken profile: the names tinker knows
	}
	if backend, cleanup, err := chooseBackend(term.Test(nil, io.Err, io.Err), opts, now); err == nil {
		defer cleanup()
		b, name = backend, backend.Name()
	}
	c := shell.CachedCandidates(context.Background(), b, completionCache(name))
	var list []string
	switch args[0] {
	case "models":
		list = c.Models
	case "runs":
		list = c.Runs
	case "paths":
		list = c.Paths
	default:
		return shell.ExitUsage
	}
	for _, s := range list {
		fmt.Fprintln(io.Out, s)
	}
	return shell.ExitOK
}

// completionCache is the cache file for one backend (by its description,
// hashed): $XDG_CACHE_HOME/tinker/complete-HASH.json, or "" without a home.
func completionCache(backend string) string {
	dir := os.Getenv("XDG_CACHE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache")
	}
	h := sha256.Sum256([]byte(backend + "\x00" + os.Getenv("TINKER_API_KEY")))
	return filepath.Join(dir, "tinker", "complete-"+hex.EncodeToString(h[:6])+".json")
}
