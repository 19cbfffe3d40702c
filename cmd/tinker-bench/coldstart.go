package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// coldStart times tinker's start next to /bin/true and a Go program that
// links net/http, built here with the Makefile's flags, the runs of each
// command interleaved so a change in the machine's load falls on all alike.
func coldStart(bins []string) error {
	hello, cleanup, err := buildHello()
	if err != nil {
		return err
	}
	defer cleanup()
	cmds := [][]string{{"/bin/true"}, {hello}}
	labels := []string{"/bin/true", "Go net/http hello world"}
	for i, bin := range bins {
		tag := ""
		if len(bins) > 1 {
			tag = fmt.Sprintf(" [%d]", i+1)
			fmt.Printf("[%d] %s\n", i+1, bin)
		}
		cmds = append(cmds, []string{bin, "--version"}, []string{bin, "-c", "1+1"})
		labels = append(labels, "tinker --version"+tag, "tinker -c 1+1"+tag)
	}
	const runs = 41
	env := append(os.Environ(), "TINKER_API_KEY=", "NO_COLOR=1")
	res, err := measure(runs, cmds, env, nil)
	if err != nil {
		return err
	}
	fmt.Printf("median of %d runs; ratios against the Go net/http hello world\n", runs)
	printTable(labels, res, res[1])
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

// buildFlags and buildEnv are `make build`'s: keep them in step, so
// neither side gains from a build setting alone.
var (
	buildFlags = []string{"-trimpath", "-ldflags=-s -w"}
	buildEnv   = []string{"CGO_ENABLED=0"}
)

// buildHello builds the reference with buildFlags and buildEnv.
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
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bin, ".")...)
	build.Dir, build.Env = dir, append(os.Environ(), buildEnv...)
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build the net/http reference: %v: %s", err, out)
	}
	return bin, cleanup, nil
}
