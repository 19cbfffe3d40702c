package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// fakeTinker puts on PATH a tinker that answers `tinker __complete KIND`
// as the backend would, and returns the new PATH.
func fakeTinker(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	prog := `#!/bin/sh
[ "$1" = __complete ] || exit 2
case "$2" in
models) printf 'Qwen/Qwen3-8B\ntinker-local/tiny-llama\n' ;;
paths) printf 'tinker://run-1:train:0/sampler_weights/final\ntinker://run-1:train:0/weights/0001\n' ;;
runs) printf 'run-1:train:0\n' ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "tinker"), []byte(prog), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + ":" + os.Getenv("PATH")
}

// TestBashCompletesNames: bash completes checkpoint paths (splitting words
// at colons as it does), models and run ids from tinker __complete, never
// file names for them, and nothing for a value it cannot know.
func TestBashCompletesNames(t *testing.T) {
	bash := completionShell(t, "bash")
	script := writeScript(t, "bash")
	path := fakeTinker(t)
	cases := []struct {
		line  string   // up to the cursor
		words []string // as bash splits it (COMP_WORDBREAKS has ':')
		want  string
	}{
		{"tinker checkpoint info tinker://", []string{"tinker", "checkpoint", "info", "tinker", ":", "//"},
			"//run-1:train:0/sampler_weights/final //run-1:train:0/weights/0001"},
		{"tinker checkpoint info tinker://run-1:train:0/w", []string{"tinker", "checkpoint", "info", "tinker", ":", "//run-1", ":", "train", ":", "0/w"},
			"0/weights/0001"},
		{"tinker sample --base-model ", []string{"tinker", "sample", "--base-model", "''"}, "Qwen/Qwen3-8B tinker-local/tiny-llama"},
		{"tinker sample --base-model tin", []string{"tinker", "sample", "--base-model", "tin"}, "tinker-local/tiny-llama"},
		{"tinker sample --model-path tinker:", []string{"tinker", "sample", "--model-path", "tinker", ":"},
			"//run-1:train:0/sampler_weights/final //run-1:train:0/weights/0001"},
		{"tinker sample --max-tokens ", []string{"tinker", "sample", "--max-tokens", "''"}, ""},
		{"tinker run info ", []string{"tinker", "run", "info", "''"}, "run-1:train:0"},
		{"tinker run info --", []string{"tinker", "run", "info", "--"}, "--format --help"},
	}
	for _, tc := range cases {
		prog := "source " + script + "; COMP_LINE=" + strconv.Quote(tc.line) + "; COMP_POINT=" + strconv.Itoa(len(tc.line)) +
			"; COMP_WORDS=(" + strings.Join(quoteAll(tc.words), " ") + "); COMP_CWORD=" + strconv.Itoa(len(tc.words)-1) +
			"; _tinker; echo \"${COMPREPLY[*]}\""
		cmd := exec.Command(bash, "--norc", "-c", prog)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", tc.line, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

func quoteAll(words []string) []string {
	q := make([]string, len(words))
	for i, w := range words {
		if w == "''" {
			q[i] = w
		} else {
			q[i] = strconv.Quote(w)
		}
	}
	return q
}

// TestZshFishCompleteNames: zsh and fish offer the same names.
func TestZshFishCompleteNames(t *testing.T) {
	path := fakeTinker(t)
	cases := []struct{ line, want string }{
		{"tinker checkpoint info tinker://", "tinker://run-1:train:0/sampler_weights/final tinker://run-1:train:0/weights/0001"},
		{"tinker sample --base-model ", "Qwen/Qwen3-8B tinker-local/tiny-llama"},
		{"tinker sample --max-tokens ", ""},
		{"tinker run info ", "run-1:train:0"},
	}
	zsh, fish := completionShell(t, "zsh"), completionShell(t, "fish")
	zscript, fscript := writeScript(t, "zsh"), writeScript(t, "fish")
	for _, tc := range cases {
		words := strings.Split(tc.line, " ")
		prog := zshStubs + "source " + zscript + "\nwords=(" + strings.Join(quoteAll(words), " ") + ")\nCURRENT=" + strconv.Itoa(len(words)) + "\n_tinker\n"
		cmd := exec.Command(zsh, "-f", "-c", prog)
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("zsh %q: %v: %s", tc.line, err, out)
		}
		var got []string
		for _, w := range withPrefix(strings.Fields(string(out)), words[len(words)-1]) {
			if w != "--" {
				got = append(got, w)
			}
		}
		sort.Strings(got)
		if strings.Join(got, " ") != tc.want {
			t.Errorf("zsh: %q completes to %q, want %q", tc.line, strings.Join(got, " "), tc.want)
		}

		cmd = exec.Command(fish, "--no-config", "-c", "source "+fscript+"; complete -C "+fishQuote(tc.line))
		cmd.Env = append(os.Environ(), "PATH="+path)
		out, err = cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fish %q: %v: %s", tc.line, err, out)
		}
		got = nil
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if c, _, _ := strings.Cut(l, "\t"); c != "" {
				got = append(got, c)
			}
		}
		sort.Strings(got)
		if strings.Join(got, " ") != tc.want {
			t.Errorf("fish: %q completes to %q, want %q", tc.line, strings.Join(got, " "), tc.want)
		}
	}
}
