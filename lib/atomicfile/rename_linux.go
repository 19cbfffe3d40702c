package atomicfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

const (
	renameNoReplace = unix.RENAME_NOREPLACE
	renameExchange  = unix.RENAME_EXCHANGE
)

func renameat2(oldpath, newpath string, flags uint) error {
	if atomicRenameOff {
		return errNoAtomicRename
	}
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, flags)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoAtomicRename
	}
	return linkError(oldpath, newpath, err)
}
