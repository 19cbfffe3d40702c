package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Every rename of the project goes through this file, so that the choice
// between the kernel's atomic forms (renameat2 with RENAME_NOREPLACE or
// RENAME_EXCHANGE) and their portable fallbacks is made in one place.

// errNoAtomicRename means the platform or file system lacks renameat2
// (non-Linux systems, some network and FUSE file systems).
var errNoAtomicRename = errors.New("atomic rename not supported")

// atomicRenameOff makes renameat2 answer errNoAtomicRename: see
// DisableAtomicRename.
var atomicRenameOff bool

// DisableAtomicRename makes this process use the portable fallbacks, as on
// a file system without renameat2, until the returned function is called.
// It lets callers' tests exercise the path other platforms take.
func DisableAtomicRename() (restore func()) {
	was := atomicRenameOff
	atomicRenameOff = true
	return func() { atomicRenameOff = was }
}

// Rename is os.Rename: newpath is replaced if it exists.
func Rename(oldpath, newpath string) error {
	return os.Rename(oldpath, newpath)
}

// Symlink makes newname a symbolic link to oldname, replacing whatever
// link or file is there in one rename of a uniquely named temporary link.
func Symlink(oldname, newname string) error {
	tmp := filepath.Join(filepath.Dir(newname), "."+filepath.Base(newname)+".tmp-"+randomID(idBytes))
	if err := os.Symlink(oldname, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, newname); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// RenameNoReplace renames oldpath to newpath unless newpath exists, in
// which case the error wraps fs.ErrExist. Where the kernel can it is one
// system call, so a concurrent creator of newpath is never overwritten;
// elsewhere a check just before the rename leaves a short window.
func RenameNoReplace(oldpath, newpath string) error {
	err := renameat2(oldpath, newpath, renameNoReplace)
	if !errors.Is(err, errNoAtomicRename) {
		return err
	}
	if _, err := os.Lstat(newpath); err == nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	return os.Rename(oldpath, newpath)
}

// exchange swaps two existing paths in one step, or answers
// errNoAtomicRename.
func exchange(a, b string) error {
	return renameat2(a, b, renameExchange)
}

func linkError(oldpath, newpath string, err error) error {
	if err == nil {
		return nil
	}
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
}

// removeDir removes a replaced copy, saying where it is if that fails.
func removeDir(p string) error {
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("remove the replaced copy %s: %w", p, err)
	}
	return nil
}
