//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

const lockSupported = true

// lockDir takes an exclusive flock on the directory p, held until the
// returned file is closed; the kernel drops it when the process dies.
func lockDir(p string) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tryLockDir is lockDir that answers nil, nil when another holder has it.
func tryLockDir(p string) (*os.File, error) {
	f, err := lockDir(p)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, nil
	}
	return f, err
}

// ShareDir takes a shared flock on the directory p, waiting for an
// exclusive holder to finish: writers that add to p hold it so that a
// sweep (which needs ExclusiveDir) leaves their work alone. Close the file
// to release it.
func ShareDir(p string) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ExclusiveDir takes an exclusive flock on the directory p if nobody holds
// it; nil, nil means somebody does.
func ExclusiveDir(p string) (*os.File, error) { return tryLockDir(p) }
