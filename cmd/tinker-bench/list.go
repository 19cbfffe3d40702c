package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// listBench imports 10,000 checkpoints into a fresh data directory, serves
// it with `tinker serve` on a loopback port, and times
// `tinker -f json checkpoint list --limit 0` end to end next to curl
// fetching the same pages one after another.
func listBench(bin string) error {
	dir, err := os.MkdirTemp("", "tinker-listbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	const key = "tml-bench"
	manifest := filepath.Join(dir, "m.json")
	doc, _ := json.Marshal(map[string]any{"owner_key": key, "generate": map[string]any{"runs": 100, "checkpoints_per_run": 100, "base_models": []string{"tinker-local/tiny-llama"}}})
	if err := os.WriteFile(manifest, doc, 0o644); err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	start := time.Now()
	if out, err := exec.Command(bin, "serve", "import", "--data", data, manifest).CombinedOutput(); err != nil {
		return fmt.Errorf("import: %v: %s", err, out)
	}
	fmt.Printf("import of 10,000 checkpoints: %.2f s\n", time.Since(start).Seconds())

	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	srv := exec.Command(bin, "serve", "--data", data, "--addr", addr)
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	base := "http://" + addr
	if err := waitUp(base + "/api/v1/healthz"); err != nil {
		return err
	}
	env := append(os.Environ(), "TINKER_BASE_URL="+base, "TINKER_API_KEY="+key)
	const runs = 7
	var ours, ref []time.Duration
	for i := 0; i < runs; i++ {
		cmd := exec.Command(bin, "-f", "json", "checkpoint", "list", "--limit", "0")
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout = &out
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("tinker checkpoint list: %v", err)
		}
		ours = append(ours, time.Since(t0))
		var got struct{ Checkpoints []json.RawMessage }
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got.Checkpoints) != 10000 {
			return fmt.Errorf("tinker listed %d checkpoints (%v), want 10000", len(got.Checkpoints), err)
		}
		// The reference: curl fetching the same ten pages one after another.
		args := []string{"-s", "-f", "-o", "/dev/null", "-H", "X-API-Key: " + key}
		for off := 0; off < 10000; off += 1000 {
			args = append(args, fmt.Sprintf("%s/api/v1/checkpoints?limit=1000&offset=%d", base, off))
			if off+1000 < 10000 {
				args = append(args, "-o", "/dev/null")
			}
		}
		t0 = time.Now()
		if out, err := exec.Command("curl", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("curl: %v: %s", err, out)
		}
		ref = append(ref, time.Since(t0))
	}
	mo, mr := median(ours), median(ref)
	fmt.Printf("tinker -f json checkpoint list --limit 0 (10,000): median %.0f ms over %d runs (target <= 500 ms)\n", ms(mo), runs)
	fmt.Printf("curl, the same 10 pages one after another:       median %.0f ms\n", ms(mr))
	fmt.Printf("ratio tinker / curl: %.2f\n", float64(mo)/float64(mr))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitUp(url string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("server at %s did not come up", url)
}
