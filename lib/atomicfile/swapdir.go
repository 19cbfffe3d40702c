package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SwapDir puts the complete directory td at dir, replacing whatever is
// there; there is no moment at which a crash loses both copies.
//
// Where the kernel has RENAME_EXCHANGE the two are swapped in one step and
// the old copy, now at td.Path (no longer locked), is removed; what a crash
// or a failed removal leaves is SweepStale's. Once the new copy is in
// place SwapDir reports success. Elsewhere it takes three
// renames, each leaving a state FinishSwaps completes:
//
//	td.Path     -> .B.new-R   the new copy is complete
//	dir         -> .B.old-R   the old copy is aside
//	.B.new-R    -> dir        the new copy is in place; .B.old-R is removed
//
// td stays locked throughout, so FinishSwaps leaves a live swap alone.
func SwapDir(td *TempDir, dir string) error {
	err := RenameNoReplace(td.Path, dir)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := exchange(td.Path, dir); !errors.Is(err, errNoAtomicRename) {
		if err == nil {
			os.RemoveAll(td.Path) // the old copy; a sweep takes what is left
		}
		return err
	}
	return swapTwoStep(td, dir)
}

const (
	newMark = ".new-"
	oldMark = ".old-"
	idBytes = 6
)

// swapNames are the names a two-step swap of dir uses.
func swapNames(dir string) (newp, oldp string, err error) {
	id := randomID(idBytes)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if len(base)+len(newMark)+len(id)+1 > 255 {
		return "", "", fmt.Errorf("replace %s: its name is too long to replace safely on this file system", dir)
	}
	return filepath.Join(parent, "."+base+newMark+id), filepath.Join(parent, "."+base+oldMark+id), nil
}

func swapTwoStep(td *TempDir, dir string) error {
	newp, oldp, err := swapNames(dir)
	if err != nil {
		return err
	}
	if err := os.Rename(td.Path, newp); err != nil {
		return err
	}
	if err := os.Rename(dir, oldp); err != nil {
		os.Rename(newp, td.Path) // back to the caller, who removes it
		return fmt.Errorf("move the old copy aside: %w", err)
	}
	if err := os.Rename(newp, dir); err != nil {
		if rerr := os.Rename(oldp, dir); rerr != nil {
			return fmt.Errorf("%w (and restoring the old copy failed: %v; it is in %s)", err, rerr, oldp)
		}
		os.Rename(newp, td.Path)
		return err
	}
	os.RemoveAll(oldp) // FinishSwaps takes what is left
	return nil
}

// FinishSwaps completes the two-step swaps of dir that a killed process
// left halfway, and returns how many. It destroys no only copy: a new copy
// already named complete is put in place, an old copy whose replacement is
// missing is put back, and an old copy is removed only once its
// replacement is in place. Call it before sweeping dir's parent.
func FinishSwaps(dir string) (int, error) {
	return finishSwaps(filepath.Dir(dir), filepath.Base(dir))
}

// FinishAllSwaps is FinishSwaps for every directory in parent, a directory
// this program owns (a user's folder may hold names of the same form).
func FinishAllSwaps(parent string) (int, error) {
	return finishSwaps(parent, "")
}

func finishSwaps(parent, only string) (int, error) {
	entries, err := readDir(parent, "interrupted replacements")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, mark := range []string{newMark, oldMark} {
		for _, e := range entries {
			base, id, ok := swapPart(e.Name(), mark)
			if !ok || (only != "" && base != only) || !present(filepath.Join(parent, e.Name())) {
				continue
			}
			finish := finishNew
			if mark == oldMark {
				finish = finishOld
			}
			done, err := finish(parent, base, id)
			if err != nil {
				return n, err
			}
			if done {
				n++
			}
		}
	}
	return n, nil
}

// swapPart splits ".B.new-R" (mark ".new-") into B and R, R being the
// random id swapNames gives (or the decimal one of os.MkdirTemp that
// earlier versions used for ".B.old-R").
func swapPart(name, mark string) (base, id string, ok bool) {
	i := strings.LastIndex(name, mark)
	if !strings.HasPrefix(name, ".") || i < 2 {
		return "", "", false
	}
	id = name[i+len(mark):]
	if id == "" || strings.Trim(id, "0123456789abcdef") != "" {
		return "", "", false
	}
	return name[1:i], id, true
}

// finishNew puts an abandoned complete new copy in place.
func finishNew(parent, base, id string) (bool, error) {
	if !lockSupported {
		return false, nil // cannot tell a live swap from an abandoned one
	}
	newp := filepath.Join(parent, "."+base+newMark+id)
	lock, err := tryLockDir(newp)
	if err != nil || lock == nil {
		return false, nil // in use, or gone already
	}
	defer lock.Close()
	dir := filepath.Join(parent, base)
	oldp := filepath.Join(parent, "."+base+oldMark+id)
	if present(dir) {
		if present(oldp) {
			return false, nil // both copies and a third: leave it to a person
		}
		// Killed before the old copy went aside: do it now.
		if err := os.Rename(dir, oldp); err != nil {
			return false, fmt.Errorf("finish replacing %s: %w", dir, err)
		}
	}
	if err := os.Rename(newp, dir); err != nil {
		return false, fmt.Errorf("finish replacing %s: %w", dir, err)
	}
	return true, removeDir(oldp)
}

// finishOld removes an old copy whose replacement is in place, or puts it
// back where the replacement is missing.
func finishOld(parent, base, id string) (bool, error) {
	oldp := filepath.Join(parent, "."+base+oldMark+id)
	newp := filepath.Join(parent, "."+base+newMark+id)
	if present(newp) {
		return false, nil // a live swap (finishNew left it)
	}
	dir := filepath.Join(parent, base)
	if present(dir) {
		return true, removeDir(oldp)
	}
	if err := os.Rename(oldp, dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("put back %s: %w", dir, err)
	}
	return true, nil
}

func isSwapPart(name string) bool {
	_, _, isNew := swapPart(name, newMark)
	_, _, isOld := swapPart(name, oldMark)
	return isNew || isOld
}

func present(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
