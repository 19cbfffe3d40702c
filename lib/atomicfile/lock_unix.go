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
