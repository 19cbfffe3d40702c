//go:build !linux

package shell

// memTotal is unknown off Linux: memoryLimit falls back to its default.
func memTotal() int64 { return 0 }
