//go:build !unix

package server

// openFileLimit is unknown here; defaultMaxConns uses its cap.
func openFileLimit() int { return 0 }
