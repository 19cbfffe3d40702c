//go:build !linux

package engine

// adviseHuge has no madvise to call off Linux (hugepages_linux.go).
func adviseHuge[T any](s []T) {}
