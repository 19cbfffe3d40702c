package download

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames old to new unless new exists (fs.ErrExist), in one
// system call, so a concurrent creator of new is never overwritten.
// They are variables so tests can exercise the portable fallbacks.
var renameNoReplace = func(oldpath, newpath string) error {
	return renameat2(oldpath, newpath, unix.RENAME_NOREPLACE)
}

// exchange atomically swaps two paths.
var exchange = func(a, b string) error {
	return renameat2(a, b, unix.RENAME_EXCHANGE)
}

func renameat2(oldpath, newpath string, flags uint) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, flags)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoAtomicRename // e.g. some network and FUSE file systems
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}
