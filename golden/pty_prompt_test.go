package golden

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
)

// session starts the prompt on a pseudo-terminal and waits for it.
func session(t *testing.T, args ...string) *console {
	t.Helper()
	cmd := tinkerCmd(t, t.TempDir(), args...)
	c := startConsole(t, cmd)
	t.Cleanup(func() {
		c.send("\x04")
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("tinker did not exit after Ctrl-D")
		}
	})
	c.expect(">>> ")
	return c
}

// enter types one line and waits for what it should show.
func (c *console) enter(line string, want ...string) string {
	c.t.Helper()
	mark := c.offset()
	c.send(line + "\r")
	for _, w := range want {
		c.expect(w)
	}
	c.expect(">>> ")
	return c.from(mark)
}

// TestPromptLaterFunction: a function may call one defined after it, as
// in Python; a name still undefined when the call runs says so.
func TestPromptLaterFunction(t *testing.T) {
	c := session(t)
	c.send("def f(x):\r")
	c.expect("... ")
	c.send("    return g(x) + 1\r")
	c.expect("... ")
	c.enter("")
	c.send("def g(x):\r")
	c.expect("... ")
	c.send("    return x * 2\r")
	c.expect("... ")
	c.enter("")
	c.enter("f(20)", "\r\n41\r\n")
	c.enter("h = lambda: later_value")
	c.enter("h()", "undefined: later_value")
	c.enter("later_value = 7")
	c.enter("h()", "\r\n7\r\n")
	// A name undefined at the top level is still an error at once.
	if out := c.enter("nosuchname + 1", "undefined: nosuchname"); strings.Contains(out, "<late>") {
		t.Errorf("the rewrite shows through:\n%s", out)
	}
}

// TestPromptPaste: a pasted block is one input, so a blank line inside a
// pasted function does not end it; a one-line paste is typed as is.
func TestPromptPaste(t *testing.T) {
	c := session(t)
	const paste = "\x1b[200~def twice(x):\r    y = x * 2\r\r    return y\r\rprint(\"defined\")\r\x1b[201~"
	out := c.enter(paste, "defined")
	if strings.Contains(out, "Error") || strings.Contains(out, "indent") {
		t.Errorf("paste failed:\n%s", out)
	}
	// Its first line shows on the prompt's line, the rest as continuation
	// lines (issue 29, item 15: not ">>> " alone, then "... def").
	if !strings.Contains(out, ">>> def twice(x):") || !strings.Contains(out, "\r\n...     y = x * 2\r\n") || strings.Contains(out, "... def") {
		t.Errorf("paste echoed as:\n%q", out)
	}
	c.enter("twice(21)", "\r\n42\r\n")
	// One line, no newline: typed, then completed by the user.
	c.send("\x1b[200~twice(\x1b[201~")
	c.enter("5)", "\r\n10\r\n")
	// Pasted into a statement begun by hand.
	c.send("def thrice(x):\r")
	c.expect("... ")
	c.enter("\x1b[200~    z = x\r\r    return z * 3\r\x1b[201~")
	c.enter("thrice(2)", "\r\n6\r\n")
}

// TestPromptShadowedModule: assigning to a builtin module's name warns,
// once, and says how to keep the module.
func TestPromptShadowedModule(t *testing.T) {
	c := session(t)
	out := c.enter("json = 1", "warning: json now names your value, which hides the json module")
	if !strings.Contains(out, "json_result = ...") {
		t.Errorf("the warning says no way out:\n%s", out)
	}
	if out := c.enter("json = 2"); strings.Contains(out, "warning") {
		t.Errorf("warned twice:\n%s", out)
	}
	if out := c.enter("x = 3"); strings.Contains(out, "warning") {
		t.Errorf("warned about a plain name:\n%s", out)
	}
}

// TestPromptTraceback: an error inside functions typed at the prompt shows
// the call stack, repeated frames folded; an error at the top level stays
// one line.
func TestPromptTraceback(t *testing.T) {
	c := session(t)
	c.send("def down(n): return 1 // 0 if n == 0 else down(n - 1)\r")
	c.expect("... ")
	c.enter("")
	out := c.enter("down(40)", "Traceback (most recent call last):", "in down",
		"[previous line repeated 37 more times]", "Error: floored division by zero")
	if n := strings.Count(out, "in down"); n != 4 { // three as Python shows them, and the innermost
		t.Errorf("%d lines of down frames, want 4:\n%s", n, out)
	}
	if out := c.enter(`int("x")`, "int"); strings.Contains(out, "Traceback") {
		t.Errorf("a top-level error shows a traceback:\n%s", out)
	}
}

// TestPromptWidthAndPager: on a narrow terminal the banner and help pages
// break between words, and a help page longer than the terminal goes
// through $PAGER; the keys come back to the prompt after it.
func TestPromptWidthAndPager(t *testing.T) {
	home := t.TempDir()
	cmd := tinkerCmd(t, home)
	cmd.Env = append(cmd.Env, "PAGER=sed s/^/paged:/")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 20, Cols: 50})
	if err != nil {
		t.Fatal(err)
	}
	c := consoleOn(t, f)
	c.expect(">>> ")
	banner := strings.ReplaceAll(c.from(0), "\x1b[?2004h", "")
	for _, l := range strings.Split(banner, "\r\n") {
		if w := utf8.RuneCountInString(l); w > 50 {
			t.Errorf("banner line of %d columns at 50: %q", w, l)
		}
	}
	const whole = "tinker 0.1.0 · backend: none (set TINKER_API_KEY, or start with --local) · help() lists builtins, Ctrl-D exits"
	if got := strings.ReplaceAll(banner, "\r\n", " "); !strings.HasPrefix(got, whole) {
		t.Errorf("banner not broken between words:\n%q", banner)
	}
	out := c.enter(`help("sft")`, "paged:sft(")
	for _, l := range strings.Split(out, "\r\n") {
		if w := utf8.RuneCountInString(strings.TrimPrefix(l, "paged:")); w > 50 {
			t.Errorf("help line of %d columns at 50: %q", w, l)
		}
	}
	// A page that fits is printed, not paged.
	if out := c.enter(`help(len)`, "len"); strings.Contains(out, "paged:") {
		t.Errorf("short help went through the pager:\n%s", out)
	}
	c.enter("1 + 1", "\r\n2\r\n")
	c.send("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}

// TestPromptCompletesInContext: Tab inside a string completes model names,
// not globals; at a call's argument it offers keyword arguments.
func TestPromptCompletesInContext(t *testing.T) {
	c := session(t)
	c.send(`x = "tinker-local/tiny-l` + "\t")
	c.expect("tinker-local/tiny-llama")
	mark := c.offset()
	c.enter(`"`)
	c.enter("x", `tinker-local/tiny-llama`)
	if out := c.from(mark); strings.Contains(out, "time") {
		t.Errorf("completed a global name inside a string:\n%s", out)
	}
	c.send(`sample("tinker-local/tiny-llama", max_t` + "\t")
	c.expect("max_tokens=")
	c.send("\x03")
	c.expect(">>> ")
	c.send("def f(alpha, beta=2): return alpha + beta\r")
	c.expect("... ")
	c.enter("")
	c.send("f(1, be\t")
	c.expect("beta=")
	c.enter("5)", "\r\n6\r\n")
}
