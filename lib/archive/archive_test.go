package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

type entry struct {
	hdr  tar.Header
	body string
}

func file(name, body string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}, body: body}
}

func dir(name string) entry {
	return entry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

func makeTar(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if h.ModTime.IsZero() && h.Typeflag != tar.TypeXGlobalHeader {
			h.ModTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("write header %q: %v", h.Name, err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// sandbox returns an empty destination inside a parent directory, so a test
// can check that nothing was written beside the destination.
func sandbox(t *testing.T) (parent, dest string) {
	parent = t.TempDir()
	dest = filepath.Join(parent, "dest")
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	return parent, dest
}

// tree lists every path under root, relative, sorted.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestExtractHappyPath(t *testing.T) {
	_, dest := sandbox(t)
	setuid := file("bin/run.sh", "#!/bin/sh\n")
	setuid.hdr.Mode = 0o4777
	data := makeTar(t,
		dir("./"),
		file("./adapter_config.json", `{"r": 8}`),
		dir("sub/"),
		file("sub/deep/weights.bin", strings.Repeat("x", 3<<20)),
		setuid,
		file("checkpoint_complete", ""),
		entry{hdr: tar.Header{Name: "g", Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "hi"}}},
	)
	var seen []string
	st, err := Extract(context.Background(), bytes.NewReader(data), dest, Options{
		BufferSize: 4096,
		OnMember:   func(name string, _ int64) { seen = append(seen, name) },
	})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if st.Files != 4 || st.Dirs != 1 || st.Bytes != int64(len(`{"r": 8}`)+3<<20+len("#!/bin/sh\n")) {
		t.Errorf("stats = %+v", st)
	}
	if len(seen) != 5 {
		t.Errorf("OnMember saw %v", seen)
	}
	want := []string{"adapter_config.json", "bin", "bin/run.sh", "checkpoint_complete", "sub", "sub/deep", "sub/deep/weights.bin"}
	if got := tree(t, dest); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("tree = %v, want %v", got, want)
	}
	b, err := os.ReadFile(filepath.Join(dest, "adapter_config.json"))
	if err != nil || string(b) != `{"r": 8}` {
		t.Errorf("adapter_config.json = %q, %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(dest, "bin/run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky) != 0 || fi.Mode().Perm()&0o022 != 0 || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("run.sh mode = %v, want 0755 without setuid", fi.Mode())
	}
	fi, err = os.Stat(filepath.Join(dest, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o111 != 0 {
		t.Errorf("adapter_config.json mode = %v, want no exec bits", fi.Mode())
	}
	if !fi.ModTime().Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("mtime = %v, want the recorded one", fi.ModTime())
	}
}

func TestExtractGzip(t *testing.T) {
	_, dest := sandbox(t)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(makeTar(t, file("a.txt", "hello"), file("checkpoint_complete", "")))
	zw.Close()
	st, err := Extract(context.Background(), &gz, dest, Options{})
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if st.Files != 2 {
		t.Errorf("files = %d", st.Files)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "a.txt")); string(b) != "hello" {
		t.Errorf("a.txt = %q", b)
	}
}

func TestExtractBzip2(t *testing.T) {
	// testdata/hello.tar.bz2 holds hello.txt = "hello bzip2\n" (made with
	// Python's tarfile, mode "w:bz2"; the standard library cannot write bzip2).
	f, err := os.Open("testdata/hello.tar.bz2")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, dest := sandbox(t)
	if _, err := Extract(context.Background(), f, dest, Options{}); err != nil {
		t.Fatalf("Extract: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "hello.txt")); string(b) != "hello bzip2\n" {
		t.Errorf("hello.txt = %q", b)
	}
}

func TestExtractRejects(t *testing.T) {
	link := func(typ byte, name, target string) entry {
		return entry{hdr: tar.Header{Name: name, Typeflag: typ, Linkname: target, Mode: 0o777}}
	}
	special := func(typ byte, name string) entry {
		return entry{hdr: tar.Header{Name: name, Typeflag: typ, Mode: 0o644, Devmajor: 1, Devminor: 3}}
	}
	cases := []struct {
		name   string
		bad    entry
		want   error
		member string
	}{
		{"dotdot", file("../evil", "x"), ErrUnsafePath, "../evil"},
		{"dotdot inside", file("a/../../evil", "x"), ErrUnsafePath, "a/../../evil"},
		{"sibling prefix", file("../dest-evil/x", "x"), ErrUnsafePath, "../dest-evil/x"},
		{"absolute", file("/tmp/abs-evil", "x"), ErrUnsafePath, "/tmp/abs-evil"},
		{"backslash", file(`..\evil`, "x"), ErrUnsafePath, `..\evil`},
		{"symlink escaping", link(tar.TypeSymlink, "ln", "../../etc"), ErrLink, "ln"},
		{"symlink absolute", link(tar.TypeSymlink, "ln", "/etc/passwd"), ErrLink, "ln"},
		{"symlink inside", link(tar.TypeSymlink, "ln", "checkpoint_complete"), ErrLink, "ln"},
		{"hardlink escaping", link(tar.TypeLink, "hl", "../../etc/passwd"), ErrLink, "hl"},
		{"char device", special(tar.TypeChar, "null"), ErrUnsupported, "null"},
		{"block device", special(tar.TypeBlock, "sda"), ErrUnsupported, "sda"},
		{"fifo", special(tar.TypeFifo, "pipe"), ErrUnsupported, "pipe"},
		{"file over dest", file(".", "x"), ErrUnsafePath, "."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent, dest := sandbox(t)
			data := makeTar(t, file("ok.txt", "fine"), tc.bad, file("after.txt", "never"))
			_, err := Extract(context.Background(), bytes.NewReader(data), dest, Options{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var me *MemberError
			if !errors.As(err, &me) || me.Name != tc.member {
				t.Errorf("err = %v, want a MemberError naming %q", err, tc.member)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tc.member)) {
				t.Errorf("message %q does not name the member", err)
			}
			if got := tree(t, parent); strings.Join(got, ",") != "dest,dest/ok.txt" {
				t.Errorf("files after rejection = %v", got)
			}
			if _, err := os.Lstat("/tmp/abs-evil"); err == nil {
				t.Errorf("/tmp/abs-evil was created")
			}
		})
	}
}

func TestExtractLimits(t *testing.T) {
	_, dest := sandbox(t)
	data := makeTar(t, file("a", "1"), file("b", "2"), file("c", "3"))
	_, err := Extract(context.Background(), bytes.NewReader(data), dest, Options{MaxFiles: 2})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), `"c"`) {
		t.Errorf("MaxFiles: err = %v", err)
	}

	_, dest = sandbox(t)
	data = makeTar(t, file("a", "12345"), file("b", "123456"))
	_, err = Extract(context.Background(), bytes.NewReader(data), dest, Options{MaxBytes: 10})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("MaxBytes: err = %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dest, "b")); serr == nil {
		t.Errorf("over-limit member was created")
	}
}

func TestExtractConflict(t *testing.T) {
	_, dest := sandbox(t)
	data := makeTar(t, file("x", "file"), file("x/y", "under a file"))
	_, err := Extract(context.Background(), bytes.NewReader(data), dest, Options{})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("err = %v, want ErrConflict", err)
	}
}

func TestExtractTruncated(t *testing.T) {
	_, dest := sandbox(t)
	data := makeTar(t, file("big", strings.Repeat("z", 100_000)))
	_, err := Extract(context.Background(), bytes.NewReader(data[:50_000]), dest, Options{})
	if err == nil || !strings.Contains(err.Error(), "truncated") || !strings.Contains(err.Error(), `"big"`) {
		t.Errorf("err = %v, want a truncation error naming the member", err)
	}
}

func TestExtractNotAnArchive(t *testing.T) {
	for name, in := range map[string]string{
		"empty": "",
		"html":  strings.Repeat("<html>AccessDenied</html>\n", 40),
		"eof":   string(make([]byte, 1024)), // end-of-archive blocks only
	} {
		t.Run(name, func(t *testing.T) {
			_, dest := sandbox(t)
			_, err := Extract(context.Background(), strings.NewReader(in), dest, Options{})
			if err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestExtractCancelled(t *testing.T) {
	_, dest := sandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	data := makeTar(t, file("a", strings.Repeat("a", 1<<20)))
	r := &cancelAfter{r: bytes.NewReader(data), n: 4096, cancel: cancel}
	_, err := Extract(ctx, r, dest, Options{BufferSize: 1024})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// cancelAfter cancels its context once n bytes have been read.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n -= n
	if c.n <= 0 {
		c.cancel()
	}
	return n, err
}

func TestLocalName(t *testing.T) {
	ok := map[string]string{"a": "a", "./a/b/": "a/b", "a/./b": "a/b", "a/../b": "b", ".": ".", "./": "."}
	for in, want := range ok {
		got, err := localName(in)
		if err != nil || got != filepath.FromSlash(want) {
			t.Errorf("localName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "..", "../", "a/../..", "/", "/a", "a\x00b", `a\b`, strings.Repeat("a", 5000)} {
		if got, err := localName(in); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("localName(%q) = %q, %v; want ErrUnsafePath", in, got, err)
		}
	}
}

// ErrTooBig is an ErrLimit and says which limit.
func TestErrTooBigIsALimit(t *testing.T) {
	if !errors.Is(ErrTooBig, ErrLimit) || !errors.Is(fmt.Errorf("x: %w", ErrTooBig), ErrTooBig) {
		t.Error("ErrTooBig does not match ErrLimit and itself through wrapping")
	}
	if got := ErrTooBig.Error(); got != "archive exceeds extraction limit on total size" {
		t.Errorf("ErrTooBig = %q", got)
	}
}
