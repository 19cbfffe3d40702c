package atomicfile

import (
	"fmt"
	"io"
)

// WriteFile replaces path with data so that a reader (or a run resumed
// after a crash) sees the old bytes or the new ones, never a mix: it is
// Write of data (a uniquely named sibling, synced, renamed over path), the
// atomic form of os.WriteFile. On any error path is untouched.
func WriteFile(path string, data []byte) error {
	err := Write(path, 0, func(w io.Writer) error {
		n, err := w.Write(data)
		if err == nil && n < len(data) {
			err = io.ErrShortWrite
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
