//go:build !unix

package atomicfile

import "os"

const lockSupported = false

func lockDir(string) (*os.File, error) { return nil, nil }

func tryLockDir(string) (*os.File, error) { return nil, nil }

// ShareDir and ExclusiveDir have no effect here: see lock_unix.go.
func ShareDir(string) (*os.File, error) { return nil, nil }

func ExclusiveDir(string) (*os.File, error) { return nil, nil }
