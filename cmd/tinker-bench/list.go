package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// listBench imports 10,000 checkpoints into a fresh data directory, serves
// it with `tinker serve` on a loopback port, and measures
// `tinker -f json checkpoint list --limit 0` end to end next to curl
// fetching the same pages one after another, runs interleaved.
func listBench(bins []string) error {
	dir, err := os.MkdirTemp("", "tinker-listbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	const key = "tml-bench"
	data := filepath.Join(dir, "data")
	if err := importCheckpoints(bins[0], dir, data, key); err != nil {
		return err
	}
	base, stop, err := serve(bins[0], data)
	if err != nil {
		return err
	}
	defer stop()
	// Each tinker runs from copies written as coldStart writes them
	// (writeCopies): bin/tinker itself may be a fresh link or a copy out
	// of the build cache, and a listing from the latter's large folios
	// took 10-15% less CPU than from the same bytes freshly linked.
	copies, err := writeCopies(bins, dir, copiesPerProgram)
	if err != nil {
		return err
	}
	cmds, labels := listCommands(bins, base, key)
	env := append(os.Environ(), "TINKER_BASE_URL="+base, "TINKER_API_KEY="+key)
	runs := listRounds(len(cmds))
	argv := func(c, round int) []string {
		if c < len(bins) {
			return append([]string{copies[c][round%len(copies[c])]}, cmds[c][1:]...)
		}
		return cmds[c]
	}
	samples, err := measureRounds(runs, len(cmds), argv, env, func(c int, out []byte) error {
		if c == len(cmds)-1 {
			return nil // curl, to /dev/null
		}
		var got struct{ Checkpoints []json.RawMessage }
		if err := json.Unmarshal(out, &got); err != nil || len(got.Checkpoints) != 10000 {
			return fmt.Errorf("%s listed %d checkpoints (%v), want 10000", labels[c], len(got.Checkpoints), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	res := mediansOf(samples)
	fmt.Printf("median of %d runs over %d copies of each tinker; ratios against curl (target: tinker <= 1.5x)\n", runs, copiesPerProgram)
	fmt.Println("tinker sends the first page, then up to 4 of the other 9 at once on up to 4 connections, decodes,")
	fmt.Println("checks and prints them; curl sends the 10 one after another on one connection and keeps nothing.")
	fmt.Println("CPU is each client's own; the server's is in neither.")
	printTable(labels, res, res[len(res)-1])
	for i := 1; i < len(bins); i++ {
		a, b := samples[i], samples[0]
		fmt.Printf("%s ÷ [1], median of per-round ratios: wall %.3f, CPU %.3f\n", labels[i],
			pairedRatio(a, b, func(r result) float64 { return float64(r.wall) }),
			pairedRatio(a, b, func(r result) float64 { return float64(r.cpu) }))
	}
	return nil
}

// listRounds is the number of measured rounds for n commands: a multiple
// of copiesPerProgram and of balancedOrder's cycle, about 24 runs each
// (a listing takes ten times a start).
func listRounds(n int) int {
	step := copiesPerProgram
	for step%balancedRows(n) != 0 {
		step += copiesPerProgram
	}
	return (24 + step - 1) / step * step
}

func importCheckpoints(bin, dir, data, key string) error {
	manifest := filepath.Join(dir, "m.json")
	doc, _ := json.Marshal(map[string]any{"owner_key": key, "generate": map[string]any{"runs": 100, "checkpoints_per_run": 100, "base_models": []string{"tinker-local/tiny-llama"}}})
	if err := os.WriteFile(manifest, doc, 0o644); err != nil {
		return err
	}
	start := time.Now()
	if out, err := exec.Command(bin, "serve", "import", "--data", data, manifest).CombinedOutput(); err != nil {
		return fmt.Errorf("import: %v: %s", err, out)
	}
	fmt.Printf("import of 10,000 checkpoints: %.2f s\n", time.Since(start).Seconds())
	return nil
}

// serve starts `tinker serve` on a free loopback port and returns its base
// URL and a function that stops it.
func serve(bin, data string) (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	srv := exec.Command(bin, "serve", "--data", data, "--addr", addr)
	if err := srv.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { srv.Process.Kill(); srv.Wait() }
	base := "http://" + addr
	if err := waitUp(base + "/api/v1/healthz"); err != nil {
		stop()
		return "", nil, err
	}
	return base, stop, nil
}

// listCommands are each binary's listing, then the reference: curl
// fetching the same ten pages one after another on one connection.
func listCommands(bins []string, base, key string) ([][]string, []string) {
	var cmds [][]string
	var labels []string
	for i, bin := range bins {
		cmds = append(cmds, []string{bin, "-f", "json", "checkpoint", "list", "--limit", "0"})
		label := "tinker checkpoint list"
		if len(bins) > 1 {
			label = fmt.Sprintf("%s [%d]", label, i+1)
			fmt.Printf("[%d] %s\n", i+1, bin)
		}
		labels = append(labels, label)
	}
	args := []string{"-s", "-f", "-H", "X-API-Key: " + key}
	for off := 0; off < 10000; off += 1000 {
		args = append(args, "-o", "/dev/null", fmt.Sprintf("%s/api/v1/checkpoints?limit=1000&offset=%d", base, off))
	}
	return append(cmds, append([]string{"curl"}, args...)), append(labels, "curl, 10 pages")
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
