package app

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/term"
)

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
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to check the bash completion script: %v", err)
	}
	script := filepath.Join(t.TempDir(), "tinker.bash")
	if err := os.WriteFile(script, []byte(completionScript(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
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

// Every command and flag of the table appears in each script.
func TestCompletionCoversCommandTable(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		s := completionScript(t, sh)
		for _, n := range walk(root) {
			if !strings.Contains(s, n.cmd.Name) {
				t.Errorf("%s script lacks command %q", sh, strings.Join(n.words, " "))
			}
			for _, f := range n.cmd.Flags {
				name := strings.TrimPrefix(f.Long, "--")
				if !strings.Contains(s, name) {
					t.Errorf("%s script lacks %s of %q", sh, f.Long, strings.Join(n.words, " "))
				}
			}
		}
	}
}
