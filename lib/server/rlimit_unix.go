//go:build unix

package server

import "syscall"

// openFileLimit is the soft limit on open files, or 0 if unknown.
func openFileLimit() int {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}
