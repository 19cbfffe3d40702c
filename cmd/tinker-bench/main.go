// Command tinker-bench measures whole-process figures that Go benchmarks
// cannot, each next to a reference measured in the same invocation:
//
//	go run ./cmd/tinker-bench coldstart bin/tinker   # start time and RSS vs /bin/true and a Go net/http program
//	go run ./cmd/tinker-bench list bin/tinker        # checkpoint list --limit 0 over 10,000 vs curl
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "coldstart" && os.Args[1] != "list") {
		fmt.Fprintln(os.Stderr, "usage: tinker-bench coldstart|list PATH/TO/tinker")
		os.Exit(2)
	}
	bin := os.Args[2]
	if os.Args[1] == "list" {
		if err := listBench(bin); err != nil {
			fmt.Fprintln(os.Stderr, "tinker-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := coldStart(bin); err != nil {
		fmt.Fprintln(os.Stderr, "tinker-bench:", err)
		os.Exit(1)
	}
}

// coldStart times tinker's start next to /bin/true and a Go program that
// links net/http (built here), the runs of each command interleaved so a
// change in the machine's load falls on all of them alike.
func coldStart(bin string) error {
	hello, cleanup, err := buildHello()
	if err != nil {
		return err
	}
	defer cleanup()
	cmds := [][]string{{"/bin/true"}, {hello}, {bin, "--version"}, {bin, "-c", "1+1"}}
	labels := []string{"/bin/true", "Go net/http hello world", "tinker --version", "tinker -c 1+1"}
	const runs = 25
	res, err := measure(runs, cmds)
	if err != nil {
		return err
	}
	fmt.Printf("%-28s %10s %12s\n", "command (median of 25)", "wall ms", "peak RSS MB")
	for i, m := range res {
		fmt.Printf("%-28s %10.2f %12.1f   (%.1f× /bin/true, %.2f× Go net/http wall)\n", labels[i],
			float64(m.wall.Microseconds())/1000, m.rss, float64(m.wall)/float64(res[0].wall), float64(m.wall)/float64(res[1].wall))
	}
	return nil
}

// helloSource is the reference program: hello world linking net/http, so
// its start pays that package's initialisation as tinker's does.
const helloSource = `package main

import (
	"fmt"
	"net/http"
)

func main() { fmt.Println("hello", http.StatusText(http.StatusOK), http.DefaultClient != nil) }
`

func buildHello() (string, func(), error) {
	dir, err := os.MkdirTemp("", "tinker-bench-hello-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	files := map[string]string{"main.go": helloSource, "go.mod": "module hello\n\ngo 1.22\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	bin := filepath.Join(dir, "hello")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build the net/http reference: %v: %s", err, out)
	}
	return bin, cleanup, nil
}

type result struct {
	wall time.Duration
	rss  float64 // MB
}

// measure runs each command n times (after two warm-up rounds for the page
// cache), one round of all commands after another, and returns each one's
// median wall time and peak RSS.
func measure(n int, cmds [][]string) ([]result, error) {
	walls := make([][]time.Duration, len(cmds))
	rss := make([][]float64, len(cmds))
	env := append(os.Environ(), "TINKER_API_KEY=", "NO_COLOR=1")
	for round := 0; round < n+2; round++ {
		for c, argv := range cmds {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env, cmd.Stdout = env, io.Discard
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("%s: %v", argv[0], err)
			}
			if round < 2 {
				continue
			}
			walls[c] = append(walls[c], time.Since(start))
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				rss[c] = append(rss[c], float64(ru.Maxrss)/1024)
			}
		}
	}
	out := make([]result, len(cmds))
	for c := range cmds {
		sort.Slice(walls[c], func(a, b int) bool { return walls[c][a] < walls[c][b] })
		sort.Float64s(rss[c])
		out[c] = result{walls[c][n/2], rss[c][n/2]}
	}
	return out, nil
}
