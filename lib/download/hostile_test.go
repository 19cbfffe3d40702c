package download

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/archive"
)

// markerFirst is a checkpoint whose marker comes before the weights, as a
// server that writes it first would send it.
func markerFirst() []member {
	m := checkpointMembers()
	return []member{m[2], m[0], m[1]}
}

// chunked answers with no Content-Length and ends the body cleanly after
// the first n bytes of data.
func chunked(data []byte, n int) func(int, http.ResponseWriter, *http.Request) bool {
	return func(_ int, w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusOK)
		w.Write(data[:n])
		w.(http.Flusher).Flush()
		return true
	}
}

// forceOver runs a forced download over an existing copy and checks that
// the copy survived the failure, which it returns.
func forceOver(t *testing.T, s *server, edit func(*Options)) error {
	t.Helper()
	parent := t.TempDir()
	old := writeOld(t, parent, "run-1:train:0_sampler_weights_final")
	o := s.opts(parent)
	o.Force = true
	o.Adapter = true
	if edit != nil {
		edit(&o)
	}
	_, err := Download(context.Background(), o)
	if err == nil {
		t.Fatal("download succeeded")
	}
	checkOld(t, old)
	if got := listing(t, parent); len(got) != 2 {
		t.Errorf("parent holds %v, want only the old copy", got)
	}
	return err
}

// A stream without Content-Length that stops between two members, after the
// marker, looks whole to a tar reader; it must not replace a good copy.
func TestDownloadCutAtMemberBoundary(t *testing.T) {
	data := makeTar(t, markerFirst()...)
	// marker: header only; config: header + one block.
	cuts := map[string]int{"before the weights": 512 + 1024, "before the end marker": len(data) - 1024}
	for name, n := range cuts {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, data)
			s.handle = chunked(data, n)
			err := forceOver(t, s, nil)
			if !errors.Is(err, ErrExtract) || !errors.Is(err, archive.ErrTruncated) {
				t.Fatalf("err = %v, want ErrExtract wrapping ErrTruncated", err)
			}
			if s.requests.Load() != 1 {
				t.Errorf("%d requests, want 1", s.requests.Load())
			}
		})
	}
}

// A whole archive that lacks the weights, or whose weights file is shorter
// than its own header says, is incomplete whatever the marker says.
func TestDownloadAdapterFiles(t *testing.T) {
	m := checkpointMembers()
	short := reg(m[1].name, m[1].body[:len(m[1].body)-100])
	cases := map[string][]member{
		"no weights":      {m[0], m[2]},
		"no config":       {m[1], m[2]},
		"short weights":   {m[0], short, m[2]},
		"config not json": {reg(m[0].name, "{"), m[1], m[2]},
	}
	for name, members := range cases {
		t.Run(name, func(t *testing.T) {
			err := forceOver(t, newServer(t, makeTar(t, members...)), nil)
			if !errors.Is(err, ErrIncomplete) {
				t.Fatalf("err = %v, want ErrIncomplete", err)
			}
		})
	}
	t.Run("training state", func(t *testing.T) {
		// No adapter required: the marker and a whole archive suffice.
		s := newServer(t, makeTar(t, reg("optimizer.pt", "state"), m[2]))
		if _, err := Download(context.Background(), s.opts(t.TempDir())); err != nil {
			t.Fatal(err)
		}
	})
}

// A Content-Length longer than the body is a broken transfer, retried and
// then reported, even though the tar inside is whole.
func TestDownloadShortOfContentLength(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	s.handle = func(_ int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)+4096))
		w.WriteHeader(http.StatusOK)
		w.Write(data)
		return true
	}
	err := forceOver(t, s, nil)
	if !errors.Is(err, ErrDownload) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want ErrDownload wrapping unexpected EOF", err)
	}
	if s.requests.Load() != 4 {
		t.Errorf("%d requests, want 4 attempts", s.requests.Load())
	}
}

// 100 MiB of zeros in about 100 KB of gzip: refused long before the end.
func TestDownloadDecompressionBomb(t *testing.T) {
	const size = 100 << 20
	var tarball bytes.Buffer
	zw := gzip.NewWriter(&tarball)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "adapter_model.safetensors", Typeflag: tar.TypeReg, Mode: 0o644, Size: size})
	for range size / (1 << 20) {
		tw.Write(make([]byte, 1<<20))
	}
	tw.Close()
	zw.Close()
	err := forceOver(t, newServer(t, tarball.Bytes()), nil)
	if !errors.Is(err, ErrExtract) || !errors.Is(err, archive.ErrLimit) || !strings.Contains(err.Error(), "decompression bomb") {
		t.Fatalf("err = %v, want a decompression-bomb ErrExtract", err)
	}
}

func TestDownloadMaxBytesFromEnv(t *testing.T) {
	t.Setenv(MaxBytesEnv, "64K")
	err := forceOver(t, newServer(t, makeTar(t, checkpointMembers()...)), nil)
	if !errors.Is(err, archive.ErrTooBig) || !strings.Contains(err.Error(), "more than 65536 bytes") || !strings.Contains(err.Error(), MaxBytesEnv) {
		t.Fatalf("err = %v, want ErrTooBig naming the limit and %s", err, MaxBytesEnv)
	}
	t.Setenv(MaxBytesEnv, "lots")
	if _, err := Download(context.Background(), Options{URL: newServer(t, nil).urlFunc(), Parent: t.TempDir(), Name: "x"}); err == nil || !strings.Contains(err.Error(), MaxBytesEnv) {
		t.Fatalf("bad %s: err = %v", MaxBytesEnv, err)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "512G": 512 << 30, "2t": 2 << 40, "10k": 10 << 10, "3M": 3 << 20} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1", "0", "1.5G", "1GB", "9999999999T"} {
		if got, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, got)
		}
	}
}

// A server that sends a byte now and then never trips the idle timer; the
// minimum rate ends it.
func TestDownloadTrickle(t *testing.T) {
	data := makeTar(t, checkpointMembers()...)
	s := newServer(t, data)
	s.handle = func(_ int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < len(data); i++ {
			select {
			case <-r.Context().Done():
				return true
			case <-tick.C:
			}
			w.Write(data[i : i+1])
			w.(http.Flusher).Flush()
		}
		return true
	}
	err := forceOver(t, s, func(o *Options) {
		o.Attempts = 2
		o.IdleTimeout = time.Minute
		o.MinRate = 1000
		o.RateWindow = 100 * time.Millisecond
	})
	if !errors.Is(err, ErrDownload) || !errors.Is(err, errTooSlow) || !strings.Contains(err.Error(), "minimum of 1000 bytes/s") {
		t.Fatalf("err = %v, want a too-slow download failure", err)
	}
	if s.requests.Load() != 2 {
		t.Errorf("%d requests, want 2", s.requests.Load())
	}
}
