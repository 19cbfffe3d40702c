package export

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"golang.org/x/sys/unix"
)

// outDir is an output directory being written: files go into a hidden
// temporary sibling that replaces the final path only in commit, so an
// interrupted or failed export leaves the old OUT (or nothing) behind.
type outDir struct {
	final, tmp string
	td         *atomicfile.TempDir
	written    int64
	progress   func(int64)
}

// CheckOut refuses an existing OUT without force before any work is done.
// An export killed while replacing OUT is finished first (the old or the
// new copy put back at OUT), so OUT is never found missing.
func CheckOut(out string, force bool) error {
	if _, err := atomicfile.FinishSwaps(linkTarget(out)); err != nil {
		return err
	}
	if lst, err := os.Lstat(out); err == nil && lst.Mode()&fs.ModeSymlink != 0 {
		if _, err := os.Stat(out); err != nil {
			return fmt.Errorf("%s is a symbolic link to a missing directory: remove the link or choose another output", out)
		}
	}
	st, err := os.Stat(out)
	switch {
	case err != nil:
		return nil
	case !force:
		return fmt.Errorf("%s already exists: pass --force (force=True) to replace it", out)
	case !st.IsDir():
		return fmt.Errorf("%s exists and is not a directory", out)
	}
	return nil
}

// linkTarget is where out points if it is a symbolic link (the directory
// an export replaces, which may be missing after a crash), else out.
func linkTarget(out string) string {
	dest, err := os.Readlink(out)
	if err != nil {
		return out
	}
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(filepath.Dir(out), dest)
	}
	return dest
}

// CheckInputs refuses an output directory that is, holds or sits inside
// one of the inputs ("" is skipped): replacing it would delete what the
// export reads, and --force must never do that.
func CheckInputs(out string, inputs ...string) error {
	o := realPath(out)
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if i := realPath(in); within(o, i) || within(i, o) {
			return fmt.Errorf("output %s is, holds or sits inside the input %s: choose an output directory elsewhere", out, in)
		}
	}
	return nil
}

// realPath is p absolute with its symbolic links resolved as far as it
// exists.
func realPath(p string) string {
	p, _ = filepath.Abs(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

func newOutDir(out string, force bool, progress func(int64)) (*outDir, error) {
	if err := CheckOut(out, force); err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(out); err == nil {
		out = r // a link to a directory: replace the directory, keep the link
	}
	parent, base := filepath.Dir(out), filepath.Base(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create output parent: %w", err)
	}
	prefix := "." + base + ".tmp-"
	atomicfile.SweepStale(parent, prefix) // left by a killed export
	td, err := atomicfile.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	if err := os.Chmod(td.Path, 0o755); err != nil { // MkdirTemp made it 0700; download makes 0755 too
		td.Release()
		os.Remove(td.Path)
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	return &outDir{final: out, tmp: td.Path, td: td, progress: progress}, nil
}

// checkRoom refuses an export whose output would not fit on the disk.
func (o *outDir) checkRoom(need int64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(o.tmp, &st); err != nil {
		return nil // cannot tell; a full disk is still caught while writing
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < need {
		return fmt.Errorf("not enough disk space for %s: need %s, %s free", o.final, humanBytes(need), humanBytes(free))
	}
	return nil
}

// write creates name in the directory from body, synced; body makes
// the next buffers while the last are written (asyncwrite.go).
func (o *outDir) write(name string, body func(io.Writer) error) error {
	f, err := os.Create(filepath.Join(o.tmp, name))
	if err != nil {
		return o.fail(name, err)
	}
	aw := newAsyncWriter(&countWriter{f: f, o: o}, 4, 1<<20)
	err = body(aw)
	if cerr := aw.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return o.fail(name, err)
	}
	return nil
}

func (o *outDir) fail(name string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("disk full while writing %s: free some space and retry (nothing was written to %s)", name, o.final)
	}
	return fmt.Errorf("write %s: %w", name, err)
}

type countWriter struct {
	f         *os.File
	o         *outDir
	n, queued int64 // bytes written to f; of which handed to writeback
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	c.count(n)
	return n, err
}

func (c *countWriter) count(n int) {
	c.n += int64(n)
	c.writeback()
	c.o.written += int64(n)
	if c.o.progress != nil {
		c.o.progress(c.o.written)
	}
}

// commit puts the directory in place, replacing an old OUT only now.
func (o *outDir) commit() error {
	defer o.td.Release()
	if err := atomicfile.SwapDir(o.td, o.final); err != nil {
		return fmt.Errorf("move output into place: %w", err)
	}
	return nil
}

// abort removes the temporary directory (a no-op after commit).
func (o *outDir) abort() {
	os.RemoveAll(o.tmp)
	o.td.Release()
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
