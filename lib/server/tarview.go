package server

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tinkershell/tinker/lib/peft"
)

// tarView is a seekable, uncompressed tar of a checkpoint directory's three
// files, built from 512-byte headers, the files themselves and zero padding,
// so nothing is copied and Range requests are cheap.
type tarView struct {
	*multiReaderAt
	files []*os.File
}

func (v *tarView) close() {
	for _, f := range v.files {
		f.Close()
	}
}

// writeTo streams every part in order; *os.File parts go through
// io.Copy, which lets net/http use sendfile.
func (v *tarView) writeTo(w io.Writer) error {
	for i, p := range v.parts {
		var err error
		if f, ok := p.(*os.File); ok {
			_, err = io.Copy(w, io.LimitReader(f, v.sizes[i]))
		} else {
			_, err = io.Copy(w, io.NewSectionReader(p, 0, v.sizes[i]))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func openTar(dir string, mtime time.Time) (*tarView, error) {
	var parts []io.ReaderAt
	var sizes []int64
	v := &tarView{}
	for _, n := range []string{peft.ConfigFile, peft.WeightsFile, peft.CompleteFile} {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			v.close()
			return nil, err
		}
		v.files = append(v.files, f)
		st, err := f.Stat()
		if err != nil {
			v.close()
			return nil, err
		}
		var hb bytes.Buffer
		tw := tar.NewWriter(&hb)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Size: st.Size(), Mode: 0o644,
			ModTime: mtime.Truncate(time.Second), Format: tar.FormatUSTAR}); err != nil {
			v.close()
			return nil, err
		}
		parts = append(parts, bytes.NewReader(hb.Bytes()[:512]), f)
		sizes = append(sizes, 512, st.Size())
		if pad := (512 - st.Size()%512) % 512; pad > 0 {
			parts = append(parts, zeros{})
			sizes = append(sizes, pad)
		}
	}
	parts = append(parts, zeros{})
	sizes = append(sizes, 1024) // end-of-archive marker
	v.multiReaderAt = newMultiReaderAt(parts, sizes)
	return v, nil
}

type zeros struct{}

func (zeros) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	return len(p), nil
}

type multiReaderAt struct {
	parts []io.ReaderAt
	offs  []int64 // start offset of each part
	sizes []int64
	size  int64
}

func newMultiReaderAt(parts []io.ReaderAt, sizes []int64) *multiReaderAt {
	m := &multiReaderAt{parts: parts, sizes: sizes, offs: make([]int64, len(parts))}
	for i, n := range sizes {
		m.offs[i] = m.size
		m.size += n
	}
	return m
}

func (m *multiReaderAt) ReadAt(p []byte, off int64) (int, error) {
	total := 0
	for i := range m.parts {
		if len(p) == 0 {
			break
		}
		start, end := m.offs[i], m.offs[i]+m.sizes[i]
		if off >= end || off+int64(len(p)) <= start {
			continue
		}
		within := off - start
		n := min(int64(len(p)), end-off)
		got, err := m.parts[i].ReadAt(p[:n], within)
		total += got
		if int64(got) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF // a file shrank under us
			}
			return total, err
		}
		p, off = p[n:], off+n
	}
	if len(p) > 0 {
		return total, io.EOF
	}
	return total, nil
}
