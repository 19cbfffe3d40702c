package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The floor of tinker's start: a program whose main is empty and which
// imports every package tinker links except the module's own, so it pays
// the runtime's start and every dependency's initialisation (SQLite's
// translated C, libc's heap, starlark's and go-humanize's tables, net/http,
// ...) and nothing of tinker's. What tinker takes beyond it is its own:
// its packages' initialisation, the faults of its larger binary, and the
// -c evaluation. The floor's binary holds only what the initialisers
// reach, so it is far smaller than tinker's.

// buildFloor builds the floor program inside this module (the one the
// current directory is in, as under `make`), so it links the versions
// go.mod names. Its
// source is laid over a directory that does not exist (go build -overlay):
// nothing is written into the module.
func buildFloor(dir string) (string, error) {
	mod, err := goOutput("list", "-m", "-f", "{{.Dir}}\n{{.Path}}")
	if err != nil {
		return "", fmt.Errorf("floor: find the module (run from the repository): %w", err)
	}
	root, module, _ := strings.Cut(mod, "\n")
	deps, err := goOutput("list", "-deps", module+"/cmd/tinker")
	if err != nil {
		return "", fmt.Errorf("floor: list tinker's packages: %w", err)
	}
	src := filepath.Join(dir, "floor.go")
	if err := os.WriteFile(src, []byte(floorSource(floorImports(strings.Fields(deps), module))), 0o644); err != nil {
		return "", err
	}
	pkg := filepath.Join(root, "cmd", "tinker-bench-floor")
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(pkg, "main.go"): src}})
	if err != nil {
		return "", err
	}
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "floor-bin")
	if err := goBuild(root, bin, "-overlay="+ov, pkg); err != nil {
		return "", fmt.Errorf("build the floor program: %w", err)
	}
	return bin, nil
}

// goOutput runs a go command with buildEnv (so `go list` sees the
// packages the build links) and returns its output, trimmed.
func goOutput(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), buildEnv...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return "", fmt.Errorf("%v: %s", err, ee.Stderr)
	}
	return strings.TrimSpace(string(out)), err
}

// floorImports keeps the packages of deps a main package can import and
// that are not module's own: internal and vendored packages come in through
// the packages that import them, and runtime/cgo and C do not build
// without cgo.
func floorImports(deps []string, module string) []string {
	var out []string
	for _, p := range deps {
		elems := strings.Split(p, "/")
		switch {
		case p == module || strings.HasPrefix(p, module+"/"),
			slices.Contains(elems, "internal"), elems[0] == "vendor",
			p == "C", p == "unsafe", p == "runtime/cgo":
			continue
		}
		out = append(out, p)
	}
	return out
}

// floorSource is a main package importing pkgs for their initialisation.
func floorSource(pkgs []string) string {
	var b strings.Builder
	b.WriteString("// The floor of tinker's start (cmd/tinker-bench floor.go).\npackage main\n\nimport (\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "\t_ %q\n", p)
	}
	b.WriteString(")\n\nfunc main() {}\n")
	return b.String()
}

// copyInPages writes a copy of the program src to dst (mode 0755) in 4 KiB
// writes. How a binary's file sits in the page cache changes its start:
// one written in large pieces is cached in large folios, and a start of
// tinker from it takes about a quarter less CPU than one from the same
// bytes written by the Go linker (through a memory map) or read back from
// disk, both of which leave 4 KiB pages. Every program measured is written this way, in
// the state of a fresh build or a binary read from disk, so none gains
// from how it was copied. Each copy is flushed before it is closed
// (syncClose), so every copy starts the rounds clean in the page cache.
func copyInPages(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	// A loop of its own: io.Copy would hand the copy to the kernel
	// (copy_file_range), which chooses its own page sizes; reading the
	// whole file at once would grow this process, whose peak RSS the
	// children's figures then inherit through the fork.
	buf := make([]byte, 4096)
	for {
		n, rerr := in.Read(buf)
		if _, err := out.Write(buf[:n]); err != nil {
			out.Close()
			return fmt.Errorf("copy %s: %w", src, err)
		}
		if rerr == io.EOF {
			return syncClose(out)
		}
		if rerr != nil {
			out.Close()
			return fmt.Errorf("copy %s: %w", src, rerr)
		}
	}
}

// syncClose flushes f to disk and closes it: a copy left dirty would be
// written back by the kernel some 30 s later, in the middle of the rounds
// and under whichever program's copies are oldest, not under all alike.
func syncClose(f *os.File) error {
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("flush %s: %w", f.Name(), err)
	}
	return f.Close()
}
