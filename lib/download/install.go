package download

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// errNoAtomicRename means the platform or file system lacks renameat2; the
// portable fallbacks below are used instead.
var errNoAtomicRename = errors.New("atomic rename not supported")

// install moves the finished directory tmp to target. Without force it
// never replaces anything: if target appeared meanwhile it fails with
// ErrTargetExists. With force an existing target is swapped out and deleted
// only after the new copy is in place; if anything fails the old copy stays.
func install(tmp, target string, force bool) error {
	if !force {
		err := renameNoReplace(tmp, target)
		if errors.Is(err, errNoAtomicRename) {
			if _, serr := os.Lstat(target); serr == nil {
				return fmt.Errorf("%w: %s", ErrTargetExists, target)
			}
			err = os.Rename(tmp, target)
		}
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrTargetExists, target)
		}
		if err != nil {
			return fmt.Errorf("move download into place: %w", err)
		}
		return nil
	}

	// Force. Nothing there yet: a plain no-replace rename.
	err := renameNoReplace(tmp, target)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errNoAtomicRename):
		if _, serr := os.Lstat(target); errors.Is(serr, fs.ErrNotExist) {
			if err := os.Rename(tmp, target); err != nil {
				return fmt.Errorf("move download into place: %w", err)
			}
			return nil
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("move download into place: %w", err)
	}

	// Something is there. Best: swap atomically, then delete the old copy,
	// which now sits at tmp. There is no instant without a target.
	if err := exchange(tmp, target); err == nil {
		if err := os.RemoveAll(tmp); err != nil {
			return fmt.Errorf("remove the replaced copy %s: %w", tmp, err)
		}
		return nil
	} else if !errors.Is(err, errNoAtomicRename) {
		return fmt.Errorf("swap download into place: %w", err)
	}

	// Fallback: move the old copy aside into a holding directory, move the
	// new one in, delete the old; restore the old copy if the second step fails.
	hold, err := os.MkdirTemp(filepath.Dir(target), "."+tempStem(filepath.Base(target))+".old-")
	if err != nil {
		return fmt.Errorf("make room for the new copy: %w", err)
	}
	aside := filepath.Join(hold, "old")
	if err := os.Rename(target, aside); err != nil {
		os.Remove(hold)
		return fmt.Errorf("move the old copy aside: %w", err)
	}
	if err := os.Rename(tmp, target); err != nil {
		if rerr := os.Rename(aside, target); rerr != nil {
			return fmt.Errorf("move download into place: %w (and restoring the old copy failed: %v; it is in %s)", err, rerr, aside)
		}
		os.Remove(hold)
		return fmt.Errorf("move download into place: %w", err)
	}
	if err := os.RemoveAll(hold); err != nil {
		return fmt.Errorf("remove the replaced copy %s: %w", hold, err)
	}
	return nil
}
