package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The linked program: cmd/tinker as this tree has it, with one change, a
// return at the top of main. Everything tinker links stays linked (main
// still calls app.Main, behind a variable the linker cannot see through)
// and initialises, with the same layout (layout.go is untouched), but none
// of main runs. Against the floor it measures what linking tinker's code
// costs a start (a larger binary's page faults, its interface tables, the
// dependencies' tables its code keeps); against `tinker --version` and
// `tinker -c '1+1'`, what their main does.

// linkedStop is the variable the early return tests.
const linkedStop = "tinkerBenchReturnAtOnce"

// buildLinked builds the linked program from the module the current
// directory is in, its main.go replaced by linkedSource's rewrite through
// go build -overlay, so nothing is written into the tree.
func buildLinked(dir string) (string, error) {
	root, err := goOutput("list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return "", fmt.Errorf("linked program: find the module (run from the repository): %w", err)
	}
	mainGo := filepath.Join(root, "cmd", "tinker", "main.go")
	orig, err := os.ReadFile(mainGo)
	if err != nil {
		return "", fmt.Errorf("linked program: %w", err)
	}
	text, err := linkedSource(string(orig))
	if err != nil {
		return "", fmt.Errorf("linked program: %s: %w", mainGo, err)
	}
	src := filepath.Join(dir, "linked.go")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {mainGo: src}})
	if err != nil {
		return "", err
	}
	ov := filepath.Join(dir, "linked-overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "linked-bin")
	if err := goBuild(root, bin, "-overlay="+ov, "./cmd/tinker"); err != nil {
		return "", fmt.Errorf("build the linked program: %w", err)
	}
	return bin, nil
}

// linkedSource is main.go with a return at the top of main, taken while
// linkedStop, a package variable set to true, says so.
func linkedSource(mainGo string) (string, error) {
	const open = "\nfunc main() {\n"
	if strings.Count(mainGo, open) != 1 {
		return "", fmt.Errorf("no single %q to add the early return to", strings.TrimSpace(open))
	}
	ret := fmt.Sprintf("%s\tif %s {\n\t\treturn\n\t}\n", open, linkedStop)
	decl := fmt.Sprintf("\n// %s is true; a variable, so main's calls stay linked.\nvar %s = true\n", linkedStop, linkedStop)
	return strings.Replace(mainGo, open, ret, 1) + decl, nil
}
