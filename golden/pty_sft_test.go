package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPromptSFTStatusLine trains at the prompt on a terminal: Ctrl-C
// clears the step line before "interrupted" is printed, and the per-step
// times (and the tokens/s the line shows) are steady, not alternating
// between a whole step and nothing as results come in two at a time.
func TestPromptSFTStatusLine(t *testing.T) {
	home := t.TempDir()
	var rows strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&rows, `{"messages": [{"role": "user", "content": "q%d?"}, {"role": "assistant", "content": "answer number %d"}]}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(home, "chats.jsonl"), []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := tinkerCmd(t, home, "--local")
	c := startConsole(t, cmd)
	c.expect(">>> ")
	mark := c.offset()
	c.send(`r = sft("tinker-local/tiny-llama", "chats.jsonl", rank=4, seed=1, epochs=5, batch_size=4)` + "\r")
	c.expect(" tok/s")
	c.expect(" tok/s") // a few steps in
	c.send("\x03")
	c.expect("interrupted")
	c.expect(">>> ")
	if out := c.from(mark); regexp.MustCompile(`ETA [^\r\n]*(sft:|interrupted)`).MatchString(out) {
		t.Errorf("the step line was not cleared before the message:\n%q", out)
	}

	mark = c.offset()
	c.send(`t = [m["time"] for m in sft("tinker-local/tiny-llama", "chats.jsonl", rank=4, seed=2, batch_size=4, max_steps=8).metrics]` + "\r")
	// Before, every other step took ~0 s (100x apart); a loaded machine
	// stretches some steps, so only an order of magnitude is asked.
	c.send("min(t[1:]) * 10 > max(t[1:])\r")
	c.expect("True")
	c.expect(">>> ")
	out := c.from(mark)
	var rates []float64
	for _, m := range regexp.MustCompile(`(\d+) tok/s`).FindAllStringSubmatch(out, -1) {
		r, _ := strconv.ParseFloat(m[1], 64)
		rates = append(rates, r)
	}
	if len(rates) < 4 {
		t.Fatalf("too few step lines:\n%q", out)
	}
	lo, hi := rates[0], rates[0]
	for _, r := range rates {
		lo, hi = min(lo, r), max(hi, r)
	}
	if hi > 10*lo {
		t.Errorf("tokens/s from %.0f to %.0f within one run: %v", lo, hi, rates)
	}
	c.send("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
