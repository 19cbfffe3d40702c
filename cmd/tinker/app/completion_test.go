package app

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/term"
)

// completionShell finds a shell for a completion test. A missing shell
// fails the test (CI installs them, see mk/completion.mk) unless
// TINKER_SKIP_MISSING_SHELLS=1 says that skipping is wanted.
func completionShell(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("TINKER_SKIP_MISSING_SHELLS") == "1" {
			t.Skipf("%s is not installed and TINKER_SKIP_MISSING_SHELLS=1", name)
		}
		t.Fatalf("%s is needed to check the %s completion script (make testdeps installs it; TINKER_SKIP_MISSING_SHELLS=1 skips): %v", name, name, err)
	}
	return path
}

func writeScript(t *testing.T, shell string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "tinker."+shell)
	if err := os.WriteFile(script, []byte(completionScript(t, shell)), 0o644); err != nil {
		t.Fatal(err)
	}
	return script
}

func completionScript(t *testing.T, shell string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main([]string{"completion", shell}, term.Test(strings.NewReader(""), &out, &errb)); code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, errb.String())
	}
	return out.String()
}

// TestBashCompletion loads the generated script into bash and asks it to
// complete a few command lines.
func TestBashCompletion(t *testing.T) {
	bash := completionShell(t, "bash")
	script := writeScript(t, "bash")
	cases := []struct{ line, want string }{
		{"tinker ch", "checkpoint"},
		{"tinker checkpoint l", "list"},
		{"tinker -f json checkpoint list --r", "--run-id"},
		{"tinker run list --", "--limit --columns --format --help"},
		{"tinker -f j", "json"},
		{"tinker --loc", "--local"},
		{"tinker --model m=/d ch", "checkpoint"},
		{"tinker completion z", "zsh"},
		{"tinker checkpoint set-ttl tinker://r/weights/1 --re", "--remove"},
	}
	for _, tc := range cases {
		words := strings.Fields(tc.line)
		arr := "(" + strings.Join(words, " ") + ")"
		prog := "source " + script + "; COMP_WORDS=" + arr + "; COMP_CWORD=" + strconv.Itoa(len(words)-1) + "; _tinker; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", tc.line, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

// zshStubs stand in for the completion system's builtins, which exist only
// inside a completion widget: each prints the candidates it is given, one a
// line, so the test sees what zsh would offer before prefix matching.
const zshStubs = `compdef() { : }
compadd() { if [[ $1 == -a ]]; then print -l -- ${(P)2}; else print -l -- "$@"; fi }
_describe() { local -a c; c=("${(@P)2}"); print -l -- ${c%%:*} }
_files() { print -- _files }
`

// TestZshCompletion runs the generated script in zsh with the words of a
// command line, as the completion system would, and checks the offers.
func TestZshCompletion(t *testing.T) {
	zsh := completionShell(t, "zsh")
	script := writeScript(t, "zsh")
	cases := []struct{ line, want string }{
		{"tinker ch", "checkpoint"},
		{"tinker checkpoint l", "list"},
		{"tinker checkpoint list ", "_files"},
		{"tinker checkpoint list --r", "--run-id"},
		{"tinker checkpoint delete --", "--run-id --type --before --after --yes --format --help"},
		{"tinker -f json checkpoint list --r", "--run-id"},
		{"tinker run list --", "--limit --columns --format --help"},
		{"tinker -f j", "json"},
		{"tinker --model m=/d ch", "checkpoint"},
		{"tinker completion z", "zsh"},
		{"tinker checkpoint set-ttl tinker://r/weights/1 --re", "--remove"},
	}
	for _, tc := range cases {
		words := strings.Split(tc.line, " ")
		cur := words[len(words)-1]
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := zshStubs + "source " + script + "\nwords=(" + strings.Join(quoted, " ") + ")\nCURRENT=" + strconv.Itoa(len(words)) + "\n_tinker\n"
		out, err := exec.Command(zsh, "-f", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", tc.line, err, out)
		}
		if got := strings.Join(withPrefix(strings.Fields(string(out)), cur), " "); got != tc.want {
			t.Errorf("%q completes to %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestFishCompletion asks fish itself (complete -C) for the candidates.
func TestFishCompletion(t *testing.T) {
	fish := completionShell(t, "fish")
	script := writeScript(t, "fish")
	cases := []struct{ line, want string }{
		{"tinker ch", "checkpoint"},
		{"tinker checkpoint l", "list"},
		{"tinker checkpoint list --r", "--run-id"},
		{"tinker checkpoint delete --", "--after --before --format --help --run-id --type --yes"},
		{"tinker -f json checkpoint list --r", "--run-id"},
		{"tinker run list --", "--columns --format --help --limit"},
		{"tinker -f j", "json"},
		{"tinker --model m=/d ch", "checkpoint"},
		{"tinker completion z", "zsh"},
		{"tinker checkpoint set-ttl tinker://r/weights/1 --re", "--remove"},
	}
	for _, tc := range cases {
		prog := "source " + script + "; complete -C " + fishQuote(tc.line)
		out, err := exec.Command(fish, "--no-config", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v: %s", tc.line, err, out)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if c, _, _ := strings.Cut(line, "\t"); c != "" {
				got = append(got, c)
			}
		}
		sort.Strings(got)
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q completes to %q, want %q", tc.line, strings.Join(got, " "), tc.want)
		}
	}
}

func withPrefix(words []string, prefix string) []string {
	var out []string
	for _, w := range words {
		if strings.HasPrefix(w, prefix) {
			out = append(out, w)
		}
	}
	return out
}

// Every command and flag of the table appears in each script.
func TestCompletionCoversCommandTable(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		s := completionScript(t, sh)
		for _, n := range walk(root) {
			if !strings.Contains(s, n.cmd.Name) {
				t.Errorf("%s script lacks command %q", sh, strings.Join(n.words, " "))
			}
			for _, f := range n.cmd.flags() {
				name := strings.TrimPrefix(f.Long, "--")
				if !strings.Contains(s, name) {
					t.Errorf("%s script lacks %s of %q", sh, f.Long, strings.Join(n.words, " "))
				}
			}
		}
	}
}
