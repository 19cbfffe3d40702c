package golden

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeTestNamesMissingTools runs make test's tool checks as a non-root
// user without zsh, fish and jq: make installs nothing, fails, and says
// what to install and why.
func TestMakeTestNamesMissingTools(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("needs make")
	}
	bin := t.TempDir() // the PATH: bash and an id that says "not root"
	if err := os.WriteFile(filepath.Join(bin, "id"), []byte("#!/bin/sh\necho 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		os.Symlink(bash, filepath.Join(bin, "bash"))
	}
	for _, target := range []string{"completion-shells", "doc-example-tools"} {
		cmd := exec.Command(mk, "--no-print-directory", "-C", "..", target)
		cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("make %s succeeded without the tools:\n%s", target, out)
		}
		want := map[string]string{
			"completion-shells": "make test needs zsh fish (the completion tests run the completion scripts in real shells",
			"doc-example-tools": "make test needs jq (the README examples pipe JSON into jq)",
		}[target]
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "sudo apt-get install") {
			t.Errorf("make %s does not say what to install and why:\n%s", target, out)
		}
		if strings.Contains(string(out), "installing") {
			t.Errorf("make %s tried to install as a non-root user:\n%s", target, out)
		}
	}
}
