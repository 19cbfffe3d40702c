// Command tinker-bench measures whole-process figures that Go benchmarks
// cannot, each next to a reference measured in the same invocation:
//
//	go run ./cmd/tinker-bench coldstart [-rounds N] bin/tinker [OTHER/tinker...]  # start vs /bin/true, a Go net/http program, the dependencies' floor and tinker returning at once
//	go run ./cmd/tinker-bench list bin/tinker [OTHER/tinker...]       # checkpoint list --limit 0 over 10,000 vs curl
//	go run ./cmd/tinker-bench run [-rounds N] CMD... [-- CMD...]...   # any commands interleaved, with peak PSS beside peak RSS
//
// Each reports CPU time (user + system, of the process and its children) and
// minor page faults beside wall time: on a loaded machine wall time mostly
// measures the other processes, CPU time and faults far less. Further
// binaries (e.g. a build of main) are measured in the same interleaved runs.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 3 || (os.Args[1] != "coldstart" && os.Args[1] != "list" && os.Args[1] != "run") {
		fmt.Fprintln(os.Stderr, "usage: tinker-bench coldstart [-rounds N] PATH/TO/tinker [OTHER/tinker...]")
		fmt.Fprintln(os.Stderr, "       tinker-bench list PATH/TO/tinker [OTHER/tinker...]")
		fmt.Fprintln(os.Stderr, "       tinker-bench run [-rounds N] PROGRAM [ARG...] [-- PROGRAM [ARG...]]...")
		os.Exit(2)
	}
	run := map[string]func([]string) error{"coldstart": coldStart, "list": listBench, "run": runBench}[os.Args[1]]
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "tinker-bench:", err)
		os.Exit(1)
	}
}
