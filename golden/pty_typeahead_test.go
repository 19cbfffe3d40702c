package golden

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// step waits for one of the texts in want (separated by "|") in the output
// after the previous step's match, then types send (or, if send is
// "SIGINT", signals the process).
type step struct{ want, send string }

// react runs cmd on a pseudo-terminal and answers each step from the
// goroutine that reads the output, the moment its text appears: no sleeps,
// so input lands in whatever window the program happens to be in. It
// returns the whole output once the program exits.
func react(t *testing.T, cmd *exec.Cmd, steps []step) (string, error) {
	t.Helper()
	return reactSized(t, cmd, &pty.Winsize{Rows: 40, Cols: 100}, steps)
}

// reactSized is react on a terminal of the given size.
func reactSized(t *testing.T, cmd *exec.Cmd, size *pty.Winsize, steps []step) (string, error) {
	t.Helper()
	f, err := pty.StartWithSize(cmd, size)
	if err != nil {
		t.Fatalf("start pty: %v", err)
	}
	defer f.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		next, off := 0, 0
		for {
			n, err := f.Read(buf)
			out.Write(buf[:n])
			for next < len(steps) {
				i, n := -1, 0
				for _, w := range strings.Split(steps[next].want, "|") {
					if j := bytes.Index(out.Bytes()[off:], []byte(w)); j >= 0 && (i < 0 || j < i) {
						i, n = j, len(w)
					}
				}
				if i < 0 {
					break
				}
				off += i + n
				if s := steps[next].send; s == "SIGINT" {
					cmd.Process.Signal(syscall.SIGINT)
				} else {
					f.WriteString(s)
				}
				next++
			}
			if err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second): // only reached when input was lost
		cmd.Process.Kill()
		err = <-done
		f.Close()
		<-read
		t.Fatalf("tinker still waiting for input after 10s (%v); output:\n%q", err, out.String())
	}
	// The reader drains what the program wrote before it exited, then
	// reads EIO; closing the terminal first would discard that output.
	<-read
	return out.String(), err
}

// TestPromptTypeAhead types ahead of the prompt and presses Ctrl-C in the
// windows between reading a statement and running it, many times over:
// every keystroke must reach the prompt or the evaluation it was meant
// for, and no SIGINT may end the session.
func TestPromptTypeAhead(t *testing.T) {
	steps := []step{
		{">>> ", "1+1\r"},
		// Ctrl-D as soon as the value appears, before the next prompt.
		{"\r\n2\r\n", "len([x for x in range(100000)])\r"},
		// Typed while that call runs.
		{"range(100000)])", "3+4\r"},
		// A whole session typed at once at the prompt: the Ctrl-C right
		// after the loop's last Enter interrupts the loop, and what follows
		// it is kept.
		{"\r\n7\r\n>>> ", "def f(x):\r    return x\r\rn = 0\rwhile True:\r    n += 1\r\r\x03f(n) >= 0\r"},
		{"interrupted\r\n", ""},
		// SIGINT as the value appears cancels that evaluation if it still
		// runs, or clears the next line; it never ends the session.
		{"True\r\n", "SIGINT"},
		{"interrupted|^C", ""},
		{">>> ", "\x04"},
	}
	const runs = 50
	for i := 0; i < runs; i++ {
		home := t.TempDir()
		out, err := react(t, tinkerCmd(t, home), steps)
		if err != nil {
			t.Fatalf("run %d: tinker exited with %v, want status 0; output:\n%q", i, err, out)
		}
		if want := "\r\n100000\r\n"; !strings.Contains(out, want) {
			t.Fatalf("run %d: output lacks %q:\n%q", i, want, out)
		}
		// The typed Ctrl-C interrupts the loop; the SIGINT does one thing.
		if n := strings.Count(out, "^C") + strings.Count(out, "interrupted"); n != 2 {
			t.Fatalf("run %d: %d interruptions, want 2 (the loop's and the SIGINT's):\n%q", i, n, out)
		}
	}
}

// TestPromptTypeAheadNoSize (issue 29, item 3): on a terminal that reports
// no size (a 0×0 window: serial consoles, `docker run -t` before its first
// resize) the line editor reads whole lines as a cooked terminal gives
// them; a Ctrl-D typed while a value prints must still end the session,
// and a Ctrl-C at the prompt must give a new one.
func TestPromptTypeAheadNoSize(t *testing.T) {
	ctrlD := []step{
		{">>> ", "1+1\r"},
		{"2\r\n", "\x04"},
	}
	// Ctrl-C at the prompt clears the line and prompts again (it used to
	// leave the prompt waiting for a line end that never came).
	ctrlC := []step{
		{">>> ", "1+1\r"},
		{"2\r\n>>> ", "\x03"},
		{">>> ", "3+4\r"},
		{"7\r\n", "\x04"},
	}
	const runs = 30
	for i := 0; i < runs; i++ {
		for _, steps := range [][]step{ctrlD, ctrlC} {
			home := t.TempDir()
			out, err := reactSized(t, tinkerCmd(t, home), &pty.Winsize{}, steps)
			if err != nil {
				t.Fatalf("run %d: tinker exited with %v, want status 0; output:\n%q", i, err, out)
			}
		}
	}
}
