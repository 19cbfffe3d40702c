//go:build unix

package app

import (
	"fmt"
	"syscall"
)

// execCompanion replaces this process with tinker-local: the same
// process, terminal, signals and exit status, so nothing between the two
// needs handing over.
func execCompanion(path string, argv, env []string) error {
	if err := syscall.Exec(path, argv, env); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}
