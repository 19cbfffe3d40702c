package server

import (
	"fmt"
	"strconv"
	"strings"
)

// validName rejects checkpoint names that cannot be a tinker path segment
// or would escape the checkpoint directory.
func validName(n string) error {
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") || len(n) > 200 {
		return fmt.Errorf("invalid checkpoint name %q: use a non-empty name without slashes", n)
	}
	return nil
}

// foldSeed accepts any 64-bit integer seed (signed or unsigned) and folds
// it into int63, as the service does.
func foldSeed(s string) (int64, error) {
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return int64(u & (1<<63 - 1)), nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i & (1<<63 - 1), err
}
