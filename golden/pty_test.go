package golden

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
)

// console drives a program through a pseudo-terminal.
type console struct {
	t    *testing.T
	f    *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // offset up to which output has been matched
	done chan struct{}
}

func startConsole(t *testing.T, cmd *exec.Cmd) *console {
	t.Helper()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatalf("start pty: %v", err)
	}
	return consoleOn(t, f)
}

// consoleOn reads the output of a program started on terminal f.
func consoleOn(t *testing.T, f *os.File) *console {
	c := &console{t: t, f: f, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { f.Close() })
	return c
}

// expect waits until want appears in output not yet matched.
func (c *console) expect(want string) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		rest := c.out.String()[c.seen:]
		if i := strings.Index(rest, want); i >= 0 {
			c.seen += i + len(want)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.Fatalf("never saw %q; output after last match:\n%s", want, c.out.String()[c.seen:])
}

// offset marks the output matched so far.
func (c *console) offset() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// from returns the output after an offset.
func (c *console) from(off int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()[off:]
}

func (c *console) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.f, s); err != nil {
		c.t.Fatalf("write to pty: %v", err)
	}
}

func tinkerCmd(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := exec.LookPath("tinker") // installed on PATH by testscript.Main
	if err != nil {
		t.Fatalf("tinker not on PATH: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(),
		"HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_DATA_HOME="+filepath.Join(home, "data"),
		"TERM=xterm", "NO_COLOR=1", "TINKER_NOW="+FixedNow, "TINKER_API_KEY=", "TINKER_FORCE_TTY=")
	return cmd
}

// TestPrompt drives the real prompt: a multi-line def, calling it, history
// recall, tab completion, Ctrl-C while typing and while evaluating, Ctrl-D.
func TestPrompt(t *testing.T) {
	home := t.TempDir()
	cmd := tinkerCmd(t, home)
	c := startConsole(t, cmd)

	c.expect("Ctrl-D exits")
	c.expect(">>> ")
	c.send("def sq(x):\r")
	c.expect("... ")
	c.send("    return x * x\r")
	c.expect("... ")
	c.send("\r")
	c.expect(">>> ")
	c.send("sq(7)\r")
	c.expect("49")
	c.expect(">>> ")

	// History: Up recalls the previous line.
	c.send("\x1b[A\r")
	c.expect("sq(7)")
	c.expect("49")
	c.expect(">>> ")

	// `_` holds the last value.
	c.send("_ + 1\r")
	c.expect("50")
	c.expect(">>> ")

	// Tab completes a global name...
	c.send("sq_value = 3\r")
	c.expect(">>> ")
	c.send("sq_v\t")
	c.expect("sq_value")
	c.send(" * 2\r")
	c.expect("6")
	c.expect(">>> ")
	// ...and a module member.
	c.send("json.enc\t")
	c.expect("json.encode")
	c.send("([1])\r")
	c.expect(`"[1]"`)
	c.expect(">>> ")

	// Ctrl-C while typing discards the line, silently.
	mark := c.offset()
	c.send("this is not valid\x03")
	c.expect(">>> ")
	c.send("1 + 2\r")
	c.expect("3")
	c.expect(">>> ")
	c.send("\x03") // and at an empty line
	c.expect(">>> ")
	c.send("4 + 5\r")
	c.expect("9")
	c.expect(">>> ")
	if out := c.from(mark); strings.Contains(out, "aborted") || strings.Contains(out, "<stdin>") {
		t.Errorf("Ctrl-C while typing printed an error:\n%s", out)
	}

	// Ctrl-C during evaluation cancels it and returns to the prompt.
	c.send("n = 0\r")
	c.expect(">>> ")
	c.send("while True:\r")
	c.expect("... ")
	c.send("    n += 1\r")
	c.expect("... ")
	c.send("\r")
	time.Sleep(300 * time.Millisecond)
	c.send("\x03")
	c.expect("interrupted")
	c.expect(">>> ")
	c.send("n > 0\r")
	c.expect("True")
	c.expect(">>> ")

	// Ctrl-D on an empty line exits 0.
	c.send("\x04")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tinker exited with %v, want status 0", err)
		}
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("tinker did not exit after Ctrl-D")
	}

	hist := filepath.Join(home, "state", "tinker", "history")
	st, err := os.Stat(hist)
	if err != nil {
		t.Fatalf("history file: %v", err)
	}
	if mode := st.Mode().Perm(); mode != 0o600 {
		t.Errorf("history mode %o, want 600", mode)
	}
	data, _ := os.ReadFile(hist)
	if !strings.Contains(string(data), "sq(7)") {
		t.Errorf("history lacks sq(7):\n%s", data)
	}
}

// TestPromptRecallsStatement checks that a statement typed over several
// lines comes back from history as one entry that runs again on Enter, in
// the same session and in the next one (through the history file).
func TestPromptRecallsStatement(t *testing.T) {
	home := t.TempDir()
	cmd := tinkerCmd(t, home)
	c := startConsole(t, cmd)
	c.expect(">>> ")
	for _, l := range []string{"def tw(x):", "    y = x * 2", "    return y + 1"} {
		c.send(l + "\r")
		c.expect("... ")
	}
	c.send("\r")
	c.expect(">>> ")
	c.send("tw = 0\r")
	c.expect(">>> ")
	// Up recalls `tw = 0`, Up again the whole def; Enter defines it again.
	mark := c.offset()
	c.send("\x1b[A\x1b[A\r")
	c.expect(">>> ")
	c.send("tw(20)\r")
	c.expect("41")
	c.expect(">>> ")
	if out := c.from(mark); strings.Contains(out, "Error") || strings.Contains(out, "<stdin>") {
		t.Errorf("recalled def failed:\n%s", out)
	}
	c.send("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}

	hist := filepath.Join(home, "state", "tinker", "history")
	data, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	const def = "def tw(x):⏎    y = x * 2⏎    return y + 1"
	if got, want := string(data), def+"\ntw = 0\n"+def+"\ntw(20)\n"; got != want {
		t.Errorf("history file:\n%s\nwant:\n%s", got, want)
	}

	// The next session reads the entry back from the file.
	cmd = tinkerCmd(t, home)
	c = startConsole(t, cmd)
	c.expect(">>> ")
	mark = c.offset()
	c.send("\x1b[A\x1b[A\r") // tw(20), the def
	c.expect(">>> ")
	c.send("tw(100)\r")
	c.expect("201")
	c.expect(">>> ")
	if out := c.from(mark); strings.Contains(out, "Error") || strings.Contains(out, "<stdin>") {
		t.Errorf("def recalled from the history file failed:\n%s", out)
	}
	c.send("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// TestScriptInterrupt checks that SIGINT stops a running script with
// status 130 and a one-line message.
func TestScriptInterrupt(t *testing.T) {
	home := t.TempDir()
	script := filepath.Join(home, "loop.star")
	if err := os.WriteFile(script, []byte("print(\"ready\")\nn = 0\nwhile True:\n    n += 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := tinkerCmd(t, home, script)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := io.ReadAtLeast(stdout, buf, len("ready\n"))
	if got := string(buf[:n]); got != "ready\n" {
		t.Fatalf("stdout %q, want ready", got)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want status 130; stderr: %s", err, stderr.String())
	}
	if got := stderr.String(); got != "interrupted\n" {
		t.Errorf("stderr %q, want \"interrupted\\n\"", got)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// TestPromptConfirmsDelete checks that checkpoint.delete at the prompt shows
// what will go and asks: "n" keeps everything, "y" deletes.
func TestPromptConfirmsDelete(t *testing.T) {
	home := t.TempDir()
	manifest := filepath.Join(home, "m.json")
	const run = "6f1c6c3e-1111-5222-8333-000000000001:train:0"
	if err := os.WriteFile(manifest, []byte(`{"owner_key": "tml-local-user", "runs": [{"id": "`+run+`",
		"base_model": "tinker-local/tiny-llama", "lora_rank": 4, "last_request_time": "2026-11-20T10:00:00Z",
		"checkpoints": [{"kind": "weights", "name": "0001", "time": "2026-11-19T10:00:00Z"},
		                {"kind": "sampler_weights", "name": "final", "time": "2026-11-20T10:00:00Z"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	imp := tinkerCmd(t, home, "serve", "import", "--data", filepath.Join(home, "data", "tinker"), manifest)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	cmd := tinkerCmd(t, home, "--local")
	c := startConsole(t, cmd)
	// The local banner names the models that need no download.
	c.expect("models that need no download: tinker-local/tiny-llama, tinker-local/tiny-qwen3")
	c.expect(">>> ")
	c.send(`checkpoint.delete(run_id="` + run + `", type="training")` + "\r")
	c.expect("Will delete 1 checkpoint(s):")
	c.expect("tinker://" + run + "/weights/0001")
	c.expect("Are you sure you want to delete 1 checkpoint(s)? [y/N]: ")
	c.send("n\r")
	c.expect("Deletion cancelled: nothing was deleted")
	c.expect(">>> ")
	c.send("len(checkpoint.list(run_id=\"" + run + "\"))\r")
	c.expect("2")
	c.expect(">>> ")
	c.send(`checkpoint.delete(run_id="` + run + `", type="training")` + "\r")
	c.expect("[y/N]: ")
	c.send("y\r")
	c.expect("Deleted 1 checkpoint(s)")
	c.expect(">>> ")
	c.send("[c.checkpoint_id for c in checkpoint.list(run_id=\"" + run + "\")]\r")
	c.expect(`["sampler_weights/final"]`)
	c.expect(">>> ")
	c.send("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// TestPromptFollowsResize checks that a table drawn after the terminal
// shrinks fits the new width.
func TestPromptFollowsResize(t *testing.T) {
	home := t.TempDir()
	cmd := tinkerCmd(t, home)
	c := startConsole(t, cmd)
	const draw = `table([{"name": "x" * 30, "text": "word " * 30}])` + "\r"
	widest := func(out string) int {
		w := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.ContainsRune(l, '│') {
				w = max(w, utf8.RuneCountInString(strings.TrimRight(l, "\r")))
			}
		}
		return w
	}
	c.expect(">>> ")
	mark := c.offset()
	c.send(draw)
	c.expect("└")
	c.expect(">>> ")
	if w := widest(c.from(mark)); w <= 40 || w > 100 {
		t.Fatalf("at 100 columns the table is %d wide, want 41..100:\n%s", w, c.from(mark))
	}
	if err := pty.Setsize(c.f, &pty.Winsize{Rows: 40, Cols: 40}); err != nil {
		t.Fatal(err)
	}
	mark = c.offset()
	c.send(draw)
	c.expect("└")
	c.expect(">>> ")
	if w := widest(c.from(mark)); w > 40 {
		t.Errorf("after shrinking to 40 columns the table is %d wide:\n%s", w, c.from(mark))
	}
	c.send("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
