//go:build !unix

package server

// freeBytes cannot be known here; saves then fail when the disk fills.
func freeBytes(string) (uint64, bool) { return 0, false }
