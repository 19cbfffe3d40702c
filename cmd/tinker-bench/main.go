// Command tinker-bench measures whole-process figures that Go benchmarks
// cannot, each next to a reference measured in the same invocation:
//
//	go run ./cmd/tinker-bench coldstart bin/tinker   # start time and RSS vs /bin/true
//	go run ./cmd/tinker-bench list bin/tinker        # checkpoint list --limit 0 over 10,000 vs curl
package main

import (
	"fmt"
	"os"
	"os/exec"
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
	const runs = 25
	ref := measure(runs, "/bin/true")
	fmt.Printf("%-28s %10s %12s\n", "command (median of 25)", "wall ms", "peak RSS MB")
	report("/bin/true", ref, ref)
	for _, args := range [][]string{{"--version"}, {"-c", "1+1"}} {
		m := measure(runs, bin, args...)
		report(fmt.Sprintf("tinker %s", join(args)), m, ref)
	}
}

type result struct {
	wall time.Duration
	rss  float64 // MB
}

func measure(n int, name string, args ...string) result {
	walls := make([]time.Duration, n)
	rss := make([]float64, n)
	env := append(os.Environ(), "TINKER_API_KEY=", "NO_COLOR=1")
	for i := 0; i < n+2; i++ {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		start := time.Now()
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		if i < 2 {
			continue // warm the page cache
		}
		walls[i-2] = time.Since(start)
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss[i-2] = float64(ru.Maxrss) / 1024
		}
	}
	sort.Slice(walls, func(a, b int) bool { return walls[a] < walls[b] })
	sort.Float64s(rss)
	return result{walls[n/2], rss[n/2]}
}

func report(label string, m, ref result) {
	fmt.Printf("%-28s %10.2f %12.1f   (%.1f× /bin/true wall)\n", label,
		float64(m.wall.Microseconds())/1000, m.rss, float64(m.wall)/float64(ref.wall))
}

func join(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}
