// Package atomicfile writes files and directories so that they appear whole
// or not at all: filled under a temporary sibling name, then renamed into place.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CreateTemp is os.CreateTemp with the permissions of an ordinary new file:
// 0666 less the umask, where os.CreateTemp always gives 0600. The file is
// renamed to a name people read, so it should look as if created there.
// The last "*" in pattern is replaced by a random string.
func CreateTemp(dir, pattern string) (*os.File, error) {
	if dir == "" {
		dir = "."
	}
	prefix, suffix := pattern, ""
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	for range 100 {
		name := filepath.Join(dir, prefix+randomID(8)+suffix)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, pattern), Err: fs.ErrExist}
}

// randomID is n random bytes in hex, for names no other writer picks.
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
