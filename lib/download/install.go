package download

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/tinkershell/tinker/lib/atomicfile"
)

// install moves the finished directory tmp to target. Without force it
// never replaces anything: if target appeared meanwhile it fails with
// ErrTargetExists. With force an existing target is swapped out and deleted
// only after the new copy is in place (atomicfile.SwapDir); if anything
// fails the old copy stays.
func install(tmp *atomicfile.TempDir, target string, force bool) error {
	if force {
		if err := atomicfile.SwapDir(tmp, target); err != nil {
			return fmt.Errorf("move download into place: %w", err)
		}
		return nil
	}
	err := atomicfile.RenameNoReplace(tmp.Path, target)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrTargetExists, target)
	}
	if err != nil {
		return fmt.Errorf("move download into place: %w", err)
	}
	return nil
}
