// Command dlbench measures download.Download against `curl -s URL | tar -x`
// on the same loopback URL, in the same invocation: a checkpoint archive
// with a ~1 GiB safetensors-like file, generated once under the cache
// directory, served by a Go file server on 127.0.0.1. Runs alternate between
// the two so both see the same machine state; the median of each is
// reported with the ratio. `make bench-download` runs it.
package main

import (
	"archive/tar"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/tinkershell/tinker/lib/atomicfile"
	"github.com/tinkershell/tinker/lib/download"
)

func main() {
	cache := flag.String("cache", ".cache/download-bench", "directory for the generated archive and extraction")
	size := flag.Int64("size", 1<<30, "size of adapter_model.safetensors in bytes")
	runs := flag.Int("runs", 3, "runs of each contender")
	flag.Parse()
	if err := run(*cache, *size, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "dlbench:", err)
		os.Exit(1)
	}
}

func run(cache string, size int64, runs int) error {
	for _, tool := range []string{"curl", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed for the comparison: %w", tool, err)
		}
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	archive := filepath.Join(cache, fmt.Sprintf("checkpoint-%d.tar", size))
	if err := ensureArchive(archive, size); err != nil {
		return fmt.Errorf("generate archive: %w", err)
	}
	fi, err := os.Stat(archive)
	if err != nil {
		return err
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, archive)
	})}
	go srv.Serve(l)
	defer srv.Close()
	url := "http://" + l.Addr().String() + "/checkpoint.tar?sig=bench"

	out := filepath.Join(cache, "out")
	os.RemoveAll(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(out)

	return report(fi.Size(), runs, url, out)
}

// report times the contenders, alternating who goes first, and prints
// the medians and their ratio.
func report(size int64, runs int, url, out string) error {
	var curlT, oursT []time.Duration
	for i := range runs {
		order := []string{"curl", "tinker"}
		if i%2 == 1 {
			order = []string{"tinker", "curl"}
		}
		for _, who := range order {
			syscall.Sync()
			var d time.Duration
			var err error
			if who == "curl" {
				d, err = timeCurl(url, out)
				curlT = append(curlT, d)
			} else {
				d, err = timeDownload(url, out)
				oursT = append(oursT, d)
			}
			if err != nil {
				return err
			}
		}
	}
	mbps := func(d time.Duration) float64 { return float64(size) / d.Seconds() / 1e6 }
	c, o := median(curlT), median(oursT)
	ratio := mbps(o) / mbps(c)
	verdict := "ok"
	if ratio < 0.9 {
		verdict = "BELOW TARGET"
	}
	fmt.Printf("download+extract of a %.2f GB checkpoint on loopback, median of %d runs each:\n", float64(size)/1e9, runs)
	fmt.Printf("  curl -s URL | tar -x : %7.0f MB/s  (%v)\n", mbps(c), fmtDurs(curlT))
	fmt.Printf("  tinker download      : %7.0f MB/s  (%v)\n", mbps(o), fmtDurs(oursT))
	fmt.Printf("  ratio tinker/curl    : %7.2fx  (target >= 0.90x: %s)\n", ratio, verdict)
	return nil
}

func timeCurl(url, out string) (time.Duration, error) {
	dir := filepath.Join(out, "curl")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	cmd := exec.Command("sh", "-c", `curl -sf "$1" | tar -x -C "$2"`, "sh", url, dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("curl | tar: %w", err)
	}
	d := time.Since(start)
	if _, err := os.Stat(filepath.Join(dir, download.Marker)); err != nil {
		return 0, fmt.Errorf("curl | tar did not extract the archive: %w", err)
	}
	return d, nil
}

func timeDownload(url, out string) (time.Duration, error) {
	start := time.Now()
	res, err := download.Download(context.Background(), download.Options{
		URL:    func(context.Context) (string, error) { return url, nil },
		Parent: out,
		Name:   "tinker",
	})
	if err != nil {
		return 0, fmt.Errorf("download: %w", err)
	}
	d := time.Since(start)
	return d, os.RemoveAll(res.Path)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func fmtDurs(ds []time.Duration) string {
	s := ""
	for i, d := range ds {
		if i > 0 {
			s += " "
		}
		s += d.Round(time.Millisecond).String()
	}
	return s
}

// ensureArchive writes a checkpoint archive unless one of the right name
// already exists: adapter_config.json, a safetensors-shaped weights file of
// the given size (pseudo-random, so nothing downstream can shortcut it),
// and the checkpoint_complete marker.
func ensureArchive(path string, size int64) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	fmt.Fprintf(os.Stderr, "dlbench: generating %s (once)\n", path)
	return atomicfile.Write(path, 0, func(f io.Writer) error { return writeArchive(f, size) })
}

// writeArchive writes the archive ensureArchive describes to f.
func writeArchive(f io.Writer, size int64) error {
	tw := tar.NewWriter(f)
	mtime := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	add := func(name string, size int64) error {
		return tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: mtime})
	}
	cfg := []byte(`{"r": 32, "lora_alpha": 32, "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}`)
	if err := add("adapter_config.json", int64(len(cfg))); err != nil {
		return err
	}
	tw.Write(cfg)

	hdr := []byte(fmt.Sprintf(`{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight":{"dtype":"F32","shape":[32,%d],"data_offsets":[0,%d]}}`, (size-1024)/128, size-1024))
	hdr = append(hdr, make([]byte, 1024-8-len(hdr))...) // pad with NULs to 1 KiB in total
	for i := range hdr {
		if hdr[i] == 0 {
			hdr[i] = ' '
		}
	}
	if err := add("adapter_model.safetensors", size); err != nil {
		return err
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
	tw.Write(n[:])
	tw.Write(hdr)
	block := make([]byte, 16<<20)
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	rng.Read(block)
	for left := size - 1024; left > 0; {
		k := min(left, int64(len(block)))
		if _, err := tw.Write(block[:k]); err != nil {
			return err
		}
		left -= k
	}
	if err := add(download.Marker, 0); err != nil {
		return err
	}
	return tw.Close()
}
