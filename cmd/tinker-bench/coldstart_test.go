package main

import (
	"os"
	"strings"
	"testing"
)

// TestBuildFlagsMatchMakefile keeps the reference program's build in step
// with `make build`: a flag or setting on one side only would make the
// cold-start ratio measure the build, not the program.
func TestBuildFlagsMatchMakefile(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(mk), "\n") {
		if strings.Contains(l, "build") && strings.Contains(l, "-o $(BIN) ./cmd/tinker") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("no `go build ... -o $(BIN) ./cmd/tinker` line in the Makefile")
	}
	want := append(append([]string{}, buildEnv...), "-trimpath", `-ldflags "-s -w"`)
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("make build's line %q lacks %q, which the reference program is built with", strings.TrimSpace(line), w)
		}
	}
	if got := strings.Join(buildFlags, " "); got != `-trimpath -ldflags=-s -w` {
		t.Errorf("buildFlags = %q: change the Makefile's build line and this test together", got)
	}
}
