package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
// named after it. perm 0 keeps an existing file's permissions (0600 stays
// 0600) and gives a new one an ordinary new file's. A symbolic link is
// followed: its target is replaced and the link stays. What is not a
// regular file (a device, a FIFO) is never replaced: the bytes are written
// to it, as a shell's redirection does.
func Write(path string, perm fs.FileMode, fill func(w io.Writer) error) error {
	target, st, err := resolve(path)
	if err != nil {
		return err
	}
	if st != nil && (!st.Mode().IsRegular() || procLink(target)) {
		return writeThrough(target, st, fill)
	}
	if perm == 0 && st != nil {
		perm = st.Mode().Perm()
	}
	p, err := Create(filepath.Dir(target), "."+filepath.Base(target)+".tmp-*", perm)
	if err != nil {
		return err
	}
	defer p.Abort()
	if err := fill(p); err != nil {
		return err
	}
	return p.Commit(target)
}

// resolve follows path's symbolic links to the file to write, and returns
// it with what is there now (nil: nothing yet).
func resolve(path string) (string, fs.FileInfo, error) {
	lst, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil, nil
	} else if err != nil {
		return "", nil, err
	}
	if lst.Mode()&fs.ModeSymlink == 0 {
		return path, lst, nil
	}
	st, err := os.Stat(path) // the kernel follows /proc's links to pipes too
	if err != nil {
		return "", nil, fmt.Errorf("%s is a symbolic link to a missing file: remove it or create its target", path)
	}
	if !st.Mode().IsRegular() || procLink(path) {
		return path, st, nil // a device, FIFO, or /dev/stdout: written through
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, fmt.Errorf("resolve %s: %w", path, err)
	}
	return target, st, nil
}

// procLink reports whether path is a link into /proc (/dev/stdout is one
// to /proc/self/fd/1): the file behind it is open in this process, so it
// is appended to rather than replaced, as a shell's >> would.
func procLink(path string) bool {
	dest, err := os.Readlink(path)
	return err == nil && strings.HasPrefix(dest, "/proc/")
}

// writeThrough writes to a FIFO, a device or an open file in place,
// appending. The open does not wait: a FIFO nobody reads is an error, not
// a hang.
func writeThrough(path string, st fs.FileInfo, fill func(w io.Writer) error) error {
	m := st.Mode()
	if m.IsDir() || m&fs.ModeSocket != 0 {
		return fmt.Errorf("%s is a %s, not a file", path, map[bool]string{true: "directory", false: "socket"}[m.IsDir()])
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		return fmt.Errorf("%s is a FIFO that nothing reads: start its reader first", path)
	} else if err != nil {
		return err
	}
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
