package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPromptSFTStatusLine trains at the prompt on a terminal: Ctrl-C
// clears the step line before "interrupted" is printed. (That per-step
// times are steady, not alternating between a whole step and nothing as
// results come in two at a time, is TestLapSharesPipelinedTime in
// lib/train: a clock-free check, where counting status lines here
// depended on how fast the machine trains.)
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
	c.send(`r = sft("tinker-local/tiny-llama", "chats.jsonl", rank=4, seed=1, epochs=200, batch_size=4)` + "\r")
	c.expect(" tok/s")
	c.expect(" tok/s") // a few steps into 2,000: Ctrl-C always lands mid-run
	c.send("\x03")
	c.expect("interrupted")
	c.expect(">>> ")
	if out := c.from(mark); regexp.MustCompile(`ETA [^\r\n]*(sft:|interrupted)`).MatchString(out) {
		t.Errorf("the step line was not cleared before the message:\n%q", out)
	}

	c.send("\x04")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
