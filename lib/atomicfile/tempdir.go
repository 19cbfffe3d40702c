package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// A TempDir is a directory being filled before it is renamed into place.
// While its writer lives it holds a lock on it, so that a later writer can
// tell a directory abandoned by a killed process (which only a process kill
// leaves behind: every error path removes its own) from one still in use,
// and sweep it with SweepStale.
type TempDir struct {
	Path string
	lock *os.File // nil where directory locks are not supported
}

// MkdirTemp is os.MkdirTemp(parent, prefix+"*") with the writer's lock
// taken. Call Release when the directory has been renamed or removed.
func MkdirTemp(parent, prefix string) (*TempDir, error) {
	p, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, err
	}
	lock, err := lockDir(p)
	if err != nil {
		os.RemoveAll(p)
		return nil, fmt.Errorf("lock %s: %w", filepath.Base(p), err)
	}
	return &TempDir{Path: p, lock: lock}, nil
}

// Release drops the writer's lock.
func (d *TempDir) Release() {
	if d.lock != nil {
		d.lock.Close()
		d.lock = nil
	}
}

// staleAge is how old an unlocked temporary directory must be before it is
// swept: it covers the moment between its creation and its lock.
const staleAge = time.Minute

// SweepStale removes the directories in parent whose names start with
// prefix and that no live writer holds: left behind by a killed process.
// The two halves of an interrupted SwapDir are FinishSwaps's, never swept.
// It returns how many it removed. Where directory locks are not supported
// it removes nothing, since it cannot tell abandoned from in use.
func SweepStale(parent, prefix string) (int, error) {
	if !lockSupported {
		return 0, nil
	}
	entries, err := readDir(parent, "abandoned temporary directories")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || isSwapPart(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < staleAge {
			continue
		}
		p := filepath.Join(parent, e.Name())
		lock, err := tryLockDir(p)
		if err != nil || lock == nil {
			continue // in use, or gone already
		}
		err = os.RemoveAll(p)
		lock.Close()
		if err != nil {
			return n, fmt.Errorf("remove abandoned %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}

// readDir lists parent, which may not exist (nothing to look at), for a
// search for what.
func readDir(parent, what string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(parent)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("look for %s: %w", what, err)
	}
	return entries, nil
}
