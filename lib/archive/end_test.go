package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// A stream cut between two members, or inside the end-of-archive marker,
// looks like a clean end to tar.Reader; Extract must call it truncated.
func TestExtractCutAtMemberBoundary(t *testing.T) {
	data := makeTar(t, file("adapter_config.json", `{"r": 8}`), file("adapter_model.safetensors", strings.Repeat("w", 700)))
	// Layout: header 512 + data 512 (padded), header 512 + data 1024, marker 1024.
	cuts := map[string]int{
		"after first member":  1024,
		"after second member": 1024 + 512 + 1024,
		"one zero block":      1024 + 512 + 1024 + 512,
	}
	for name, n := range cuts {
		t.Run(name, func(t *testing.T) {
			_, dest := sandbox(t)
			_, err := Extract(context.Background(), bytes.NewReader(data[:n]), dest, Options{})
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("err = %v, want ErrTruncated", err)
			}
		})
	}
	t.Run("whole", func(t *testing.T) {
		_, dest := sandbox(t)
		// Record padding after the marker, as GNU tar and Python write it.
		padded := append(bytes.Clone(data), make([]byte, 10240-len(data)%10240)...)
		st, err := Extract(context.Background(), bytes.NewReader(padded), dest, Options{})
		if err != nil || st.Files != 2 {
			t.Fatalf("Extract = %+v, %v", st, err)
		}
	})
	t.Run("garbage after the marker", func(t *testing.T) {
		_, dest := sandbox(t)
		long := append(bytes.Clone(data), bytes.Repeat([]byte{'x'}, maxTrailing+1)...)
		_, err := Extract(context.Background(), bytes.NewReader(long), dest, Options{})
		if err == nil || !strings.Contains(err.Error(), "after the end-of-archive marker") {
			t.Fatalf("err = %v", err)
		}
	})
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The gzip trailer (checksum and length) follows the tar marker; a stream
// cut there or corrupted there is refused.
func TestExtractGzipTrailer(t *testing.T) {
	z := gzipped(t, makeTar(t, file("a", strings.Repeat("abc", 1000))))
	_, dest := sandbox(t)
	_, err := Extract(context.Background(), bytes.NewReader(z[:len(z)-8]), dest, Options{})
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("cut trailer: err = %v, want ErrTruncated", err)
	}
	bad := bytes.Clone(z)
	bad[len(bad)-8] ^= 0xff // CRC-32
	_, dest = sandbox(t)
	if _, err := Extract(context.Background(), bytes.NewReader(bad), dest, Options{}); !errors.Is(err, gzip.ErrChecksum) {
		t.Errorf("bad checksum: err = %v, want gzip.ErrChecksum", err)
	}
}

// zeroBomb streams a gzip-compressed tar holding one file of size zero
// bytes, produced on the fly.
func zeroBomb(size int64) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestCompression)
		tw := tar.NewWriter(zw)
		err := tw.WriteHeader(&tar.Header{Name: "weights", Typeflag: tar.TypeReg, Mode: 0o644, Size: size})
		if err == nil {
			_, err = io.CopyN(tw, zeros{}, size)
		}
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestExtractDecompressionBomb(t *testing.T) {
	const size = 100 << 20 // 100 MiB of zeros, about 100 KB compressed
	for name, announced := range map[string]int64{"length unknown": 0, "length announced": 100 << 10} {
		t.Run(name, func(t *testing.T) {
			_, dest := sandbox(t)
			r := zeroBomb(size)
			st, err := Extract(context.Background(), r, dest, Options{Announced: announced})
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "decompression bomb") {
				t.Fatalf("err = %v, want a decompression-bomb ErrLimit", err)
			}
			if st.Bytes >= size {
				t.Errorf("wrote %d bytes before stopping", st.Bytes)
			}
		})
	}
	t.Run("within the ratio", func(t *testing.T) {
		_, dest := sandbox(t)
		r := zeroBomb(size)
		st, err := Extract(context.Background(), r, dest, Options{MaxRatio: 2000})
		if err != nil || st.Bytes != size {
			t.Fatalf("Extract = %+v, %v", st, err)
		}
	})
}
