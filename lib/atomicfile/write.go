package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data so that a reader (or a run resumed
// after a crash) sees the old bytes or the new ones, never a mix: the data
// goes to a uniquely named sibling, is synced to disk, and is renamed over
// path. A unique name keeps two writers of the same path from writing into
// one temporary file; the sync keeps a power loss from leaving the renamed
// file empty. On any error the temporary file is removed and path is
// untouched.
func WriteFile(path string, data []byte) error {
	f, err := CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
