// Package archive extracts tar streams (plain, gzip or bzip2) into a directory
// without trusting the archive.
//
// Policy, chosen to be simple enough to reason about:
//   - only regular files and directories are extracted;
//   - every link (symbolic or hard) is rejected, whatever it points at, as the
//     official Tinker CLI does; checkpoints never contain links;
//   - devices, FIFOs, sparse files and any other member type are rejected;
//   - a member name must be relative and stay inside the destination after
//     cleaning (no absolute paths, no ".." escaping, no NUL or backslash);
//     on top of that lexical check all file operations go through an
//     os.Root, so the kernel refuses to resolve anything outside destDir;
//   - modes are normalised: directories 0755, files 0644 or 0755 when any
//     execute bit was set; setuid, setgid and sticky bits are dropped;
//   - limits on member count and total bytes stop tar bombs, and a
//     compressed stream may expand only MaxRatio times its announced (or
//     read) length, which stops decompression bombs early;
//   - the archive must end with tar's end-of-archive marker (two zero
//     blocks), and the compressed stream must end cleanly after it, so a
//     stream cut off between two members is an error, not a short archive.
//
// Extract streams: it never needs to seek and never buffers a member in
// memory, so it can read straight from an HTTP body. It does not clean up on
// error; extract into a fresh directory and remove it if Extract fails
// (lib/download does exactly that).
package archive

import (
	"archive/tar"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tinkershell/tinker/lib/userfile"
)

// Default limits, generous for model checkpoints (a few files; LoRA
// adapters of the largest mixture-of-experts models and their optimizer
// state reach tens of GB) but finite.
const (
	DefaultMaxFiles = 10_000
	DefaultMaxBytes = 256 << 30 // 256 GiB
	// DefaultMaxRatio bounds how far a compressed archive may expand.
	// Weights compress poorly (well under 10:1 even with zero-initialised
	// tensors interleaved); gzip's ceiling is about 1000:1.
	DefaultMaxRatio = 100
	// expansionSlack is added to every ratio bound, so tar headers and a
	// run of zeros early in a small archive never trip it.
	expansionSlack = 64 << 20
	// maxTrailing bounds what may follow the end-of-archive marker (tar
	// writers pad to a record size, 10 KiB by default).
	maxTrailing = 1 << 20
	maxNameLen  = 4096
)

// Errors a member can be rejected with; test with errors.Is. The returned
// error is a *MemberError naming the member.
var (
	ErrUnsafePath  = errors.New("unsafe path")                             // absolute, escaping or malformed name
	ErrLink        = errors.New("symbolic and hard links are not allowed") // any link member
	ErrUnsupported = errors.New("unsupported member type")                 // device, FIFO, sparse, ...
	ErrLimit       = errors.New("archive exceeds extraction limit")        // MaxFiles or MaxBytes
	ErrConflict    = errors.New("member conflicts with an earlier member") // file over dir or dir over file
	ErrTruncated   = errors.New("archive is truncated")                    // ends without tar's end-of-archive marker
	// ErrTooBig: the files add up to more than MaxBytes.
	ErrTooBig error = tooBig{}
)

// tooBig is ErrTooBig, an ErrLimit; a type rather than fmt.Errorf, which
// would run at every start.
type tooBig struct{}

func (tooBig) Error() string { return ErrLimit.Error() + " on total size" }
func (tooBig) Unwrap() error { return ErrLimit }

// MemberError reports a problem with one archive member.
type MemberError struct {
	Name string // the member name as recorded in the archive
	Err  error
}

func (e *MemberError) Error() string {
	return fmt.Sprintf("archive member %q: %v", e.Name, e.Err)
}

func (e *MemberError) Unwrap() error { return e.Err }

// Options bound and observe an extraction. The zero value is usable.
type Options struct {
	MaxFiles int   // members (files and directories); 0 means DefaultMaxFiles
	MaxBytes int64 // total bytes of regular files; 0 means DefaultMaxBytes
	// MaxRatio bounds a compressed archive's expansion: the decompressed
	// stream may not exceed MaxRatio times the compressed length (Announced
	// when known, else the bytes read so far) plus 64 MiB. 0 means
	// DefaultMaxRatio; plain tar is bounded by MaxBytes alone.
	MaxRatio int64
	// Announced is the archive's length as its sender announced it (an
	// HTTP Content-Length), 0 if unknown.
	Announced int64
	// BufferSize is the copy buffer size; 0 means 1 MiB.
	BufferSize int
	// OnMember, if set, is called after each member has been extracted.
	OnMember func(name string, size int64)
}

// Stats describes what an extraction wrote.
type Stats struct {
	Files int   // regular files
	Dirs  int   // directories (explicit members only)
	Bytes int64 // bytes of regular files
}

// Extract reads a tar stream from r, gzip- or bzip2-compressed or not
// (detected from the first bytes), and writes its files and directories under
// destDir, which must exist. See the package comment for the safety policy.
func Extract(ctx context.Context, r io.Reader, destDir string, opts Options) (Stats, error) {
	var st Stats
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.BufferSize <= 0 {
		opts.BufferSize = 1 << 20
	}
	if opts.MaxRatio <= 0 {
		opts.MaxRatio = DefaultMaxRatio
	}

	in := &countReader{r: r}
	src, compressed, err := decompress(in)
	if err != nil {
		return st, err
	}
	if compressed {
		src = &ratioReader{r: src, in: in, ratio: opts.MaxRatio, announced: opts.Announced}
	}
	// end counts the plain tar stream, to tell where the marker began.
	end := &countReader{r: src}
	root, err := os.OpenRoot(destDir)
	if err != nil {
		return st, fmt.Errorf("open extraction directory: %w", err)
	}
	defer root.Close()

	x := extractor{root: root, opts: opts, buf: make([]byte, opts.BufferSize)}
	tr := tar.NewReader(userfile.ContextReader(ctx, end))
	for {
		if err := ctx.Err(); err != nil {
			return x.st, err
		}
		// With the member read to its end only padding (< 512 bytes)
		// separates mark from the next header or the end-of-archive marker.
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return x.st, fmt.Errorf("read tar archive: %w", err)
		}
		mark := end.n
		hdr, err := tr.Next()
		if err == io.EOF {
			// tar.Reader also reports a plain EOF, or one zero block and
			// EOF, as the end; only two whole zero blocks are the marker.
			if end.n-mark < 2*512 {
				return x.st, fmt.Errorf("read tar archive: %w: the stream ends without the end-of-archive marker", ErrTruncated)
			}
			break
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return x.st, cerr
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("%w: %w", ErrTruncated, err)
			}
			return x.st, fmt.Errorf("read tar archive: %w", err)
		}
		if err := x.member(tr, hdr); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return x.st, cerr
			}
			return x.st, err
		}
	}
	if x.st.Files == 0 && x.st.Dirs == 0 && !x.sawHeader {
		return x.st, errors.New("read tar archive: archive is empty")
	}
	// Read on to the end of the stream: a compressed stream checks its
	// checksum and length there, and a cut-off stream shows up as an error.
	if err := trailing(src); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return x.st, cerr
		}
		return x.st, err
	}
	// Directory mtimes last: creating their contents changed them.
	for i := len(x.dirTimes) - 1; i >= 0; i-- {
		d := x.dirTimes[i]
		_ = root.Chtimes(d.name, d.mtime, d.mtime) // cosmetic; never fail for it
	}
	return x.st, nil
}

type dirTime struct {
	name  string
	mtime time.Time
}

type extractor struct {
	root      *os.Root
	opts      Options
	buf       []byte
	st        Stats
	sawHeader bool
	dirTimes  []dirTime
}

func (x *extractor) member(tr *tar.Reader, hdr *tar.Header) error {
	x.sawHeader = true
	fail := func(err error) error { return &MemberError{Name: hdr.Name, Err: err} }

	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		return nil // PAX global metadata, nothing to extract
	case tar.TypeSymlink, tar.TypeLink:
		return fail(fmt.Errorf("%w (link to %q)", ErrLink, hdr.Linkname))
	case tar.TypeReg, tar.TypeRegA, tar.TypeDir:
	case tar.TypeChar, tar.TypeBlock:
		return fail(fmt.Errorf("%w: device file", ErrUnsupported))
	case tar.TypeFifo:
		return fail(fmt.Errorf("%w: FIFO", ErrUnsupported))
	case tar.TypeGNUSparse:
		return fail(fmt.Errorf("%w: sparse file", ErrUnsupported))
	default:
		return fail(fmt.Errorf("%w: type %q", ErrUnsupported, hdr.Typeflag))
	}

	name, err := localName(hdr.Name)
	if err != nil {
		return fail(err)
	}
	if x.st.Files+x.st.Dirs >= x.opts.MaxFiles {
		return fail(fmt.Errorf("%w: more than %d members", ErrLimit, x.opts.MaxFiles))
	}

	if hdr.Typeflag == tar.TypeDir {
		if name == "." {
			return nil // the destination itself
		}
		if err := x.root.MkdirAll(name, 0o755); err != nil {
			return fail(conflict(err))
		}
		x.st.Dirs++
		x.dirTimes = append(x.dirTimes, dirTime{name, hdr.ModTime})
		if x.opts.OnMember != nil {
			x.opts.OnMember(hdr.Name, 0)
		}
		return nil
	}

	if name == "." {
		return fail(fmt.Errorf("%w: a file cannot replace the destination directory", ErrUnsafePath))
	}
	if hdr.Size < 0 || hdr.Size > x.opts.MaxBytes-x.st.Bytes {
		return fail(fmt.Errorf("%w: more than %d bytes", ErrTooBig, x.opts.MaxBytes))
	}
	if dir := filepath.Dir(name); dir != "." {
		if err := x.root.MkdirAll(dir, 0o755); err != nil {
			return fail(conflict(err))
		}
	}
	perm := fs.FileMode(0o644)
	if hdr.Mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fail(conflict(err))
	}
	// Hide (*os.File).ReadFrom so the large buffer is used: its generic
	// fallback would copy in 32 KiB steps.
	n, err := io.CopyBuffer(writerOnly{f}, tr, x.buf)
	x.st.Bytes += n
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fail(fmt.Errorf("%w: %w", ErrTruncated, err))
		}
		return fail(err)
	}
	x.st.Files++
	if !hdr.ModTime.IsZero() {
		_ = x.root.Chtimes(name, hdr.ModTime, hdr.ModTime) // cosmetic
	}
	if x.opts.OnMember != nil {
		x.opts.OnMember(hdr.Name, n)
	}
	return nil
}

// localName turns a tar member name into a clean relative path that cannot
// leave the destination, or explains why it cannot.
func localName(name string) (string, error) {
	switch {
	case name == "":
		return "", fmt.Errorf("%w: empty name", ErrUnsafePath)
	case len(name) > maxNameLen:
		return "", fmt.Errorf("%w: name longer than %d bytes", ErrUnsafePath, maxNameLen)
	case strings.ContainsRune(name, 0):
		return "", fmt.Errorf("%w: name contains NUL", ErrUnsafePath)
	case strings.ContainsRune(name, '\\'):
		// A separator on Windows and a trick elsewhere; checkpoints never need it.
		return "", fmt.Errorf("%w: name contains a backslash", ErrUnsafePath)
	case path.IsAbs(name) || filepath.IsAbs(filepath.FromSlash(name)):
		return "", fmt.Errorf("%w: absolute path", ErrUnsafePath)
	}
	clean := filepath.FromSlash(path.Clean(name))
	if clean == "." {
		return ".", nil
	}
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("%w: path leaves the destination directory", ErrUnsafePath)
	}
	// Belt and braces: the joined path must be inside a stand-in root.
	const base = "/dest"
	rel, err := filepath.Rel(base, filepath.Join(base, clean))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: path leaves the destination directory", ErrUnsafePath)
	}
	return clean, nil
}

// conflict classifies a file-system error from creating a member: a path
// component that is a file, or a file where a directory exists, is the
// archive's fault; anything else (permissions, disk full) is reported as is.
func conflict(err error) error {
	if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %v", ErrConflict, err)
	}
	return err
}

// trailing reads what follows the end-of-archive marker to EOF: zero
// padding, and for compressed archives the stream's trailer.
func trailing(r io.Reader) error {
	n, err := io.Copy(io.Discard, io.LimitReader(r, maxTrailing+1))
	switch {
	case err != nil && errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("read tar archive: %w: %v", ErrTruncated, err)
	case err != nil:
		return fmt.Errorf("read tar archive: after the end-of-archive marker: %w", err)
	case n > maxTrailing:
		return fmt.Errorf("read tar archive: more than %d bytes after the end-of-archive marker", maxTrailing)
	}
	return nil
}

// decompress sniffs the first bytes of r and returns a reader of the plain
// tar stream, and whether it was compressed.
func decompress(r io.Reader) (io.Reader, bool, error) {
	var head [3]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, false, fmt.Errorf("read archive: %w", err)
	}
	if n == 0 {
		return nil, false, errors.New("read tar archive: archive is empty")
	}
	full := io.MultiReader(bytes.NewReader(head[:n]), r)
	switch {
	case n >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		zr, err := gzip.NewReader(full)
		if err != nil {
			return nil, false, fmt.Errorf("read gzip archive: %w", err)
		}
		return zr, true, nil
	case n == 3 && string(head[:]) == "BZh":
		return bzip2.NewReader(full), true, nil
	}
	return full, false, nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioReader stops a decompressed stream that grows beyond ratio times
// its compressed length: the announced one when known (so a zero-heavy
// start is fine), else what has been read so far (so a bomb is stopped
// within its first megabytes).
type ratioReader struct {
	r         io.Reader
	in        *countReader // the compressed stream
	ratio     int64
	announced int64
	out       int64
}

func (z *ratioReader) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	z.out += int64(n)
	base := max(z.announced, z.in.n)
	if limit := z.ratio*base + expansionSlack; base < math.MaxInt64/(2*z.ratio) && z.out > limit {
		return n, fmt.Errorf("%w: the compressed archive expands more than %d times its size of %d bytes; refusing a likely decompression bomb", ErrLimit, z.ratio, base)
	}
	return n, err
}

type writerOnly struct{ io.Writer }
