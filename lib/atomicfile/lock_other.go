//go:build !unix

package atomicfile

import "os"

const lockSupported = false

func lockDir(string) (*os.File, error) { return nil, nil }

func tryLockDir(string) (*os.File, error) { return nil, nil }

// ShareDir and ExclusiveDir take no lock here (see lock_unix.go): they
// always succeed, as if nobody else held the directory.
func ShareDir(p string) (*os.File, error) { return os.Open(p) }

func ExclusiveDir(p string) (*os.File, error) { return os.Open(p) }
