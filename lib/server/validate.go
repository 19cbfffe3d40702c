package server

import "strconv"

// foldSeed accepts any 64-bit integer seed (signed or unsigned) and folds
// it into int63, as the service does.
func foldSeed(s string) (int64, error) {
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return int64(u & (1<<63 - 1)), nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i & (1<<63 - 1), err
}
