package atomicfile

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// A Pending file is written under a unique temporary name beside the file
// it will replace, then committed (synced and renamed into place) or
// aborted (removed). Readers of the final name see the old content or the
// new, never a part, and a crash leaves at most a hidden temporary file.
type Pending struct {
	*os.File
	done bool
}

// Create starts a pending file in dir; pattern is as for CreateTemp (its
// last "*" becomes a random string), and the file has an ordinary new
// file's permissions unless perm is set.
func Create(dir, pattern string, perm fs.FileMode) (*Pending, error) {
	f, err := CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if perm != 0 {
		if err := f.Chmod(perm); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
	}
	return &Pending{File: f}, nil
}

// Commit syncs and closes the file and renames it to path. On failure the
// temporary file is removed and path is untouched.
func (p *Pending) Commit(path string) error {
	p.done = true
	err := p.Sync()
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.Name(), path)
	}
	if err != nil {
		os.Remove(p.Name())
	}
	return err
}

// Abort closes and removes the file unless it was committed, so that it
// can be deferred right after Create.
func (p *Pending) Abort() {
	if p.done {
		return
	}
	p.done = true
	p.Close()
	os.Remove(p.Name())
}

// Write replaces path with what fill writes, through a pending sibling
// named after it. perm 0 gives an ordinary new file's permissions.
func Write(path string, perm fs.FileMode, fill func(w io.Writer) error) error {
	p, err := Create(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*", perm)
	if err != nil {
		return err
	}
	defer p.Abort()
	if err := fill(p); err != nil {
		return err
	}
	return p.Commit(path)
}
