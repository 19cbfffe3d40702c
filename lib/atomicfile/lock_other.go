//go:build !unix

package atomicfile

import "os"

const lockSupported = false

func lockDir(string) (*os.File, error) { return nil, nil }

func tryLockDir(string) (*os.File, error) { return nil, nil }
