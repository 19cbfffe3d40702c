//go:build !unix

package app

import "fmt"

// execCompanion: without exec(2) the hand-over would need a child process
// that forwards signals and the terminal; run tinker-local directly.
func execCompanion(path string, argv, env []string) error {
	return fmt.Errorf("this system cannot hand tinker over to %s: run %s directly for the local server", path, path)
}
