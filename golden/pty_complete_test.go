package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPromptCompletesInStrings (issue 29, item 13): Tab inside a string
// completes file names (io.read_text("qa_ ⇥) and directories, and closes
// the quote after a lone complete name, file or model.
func TestPromptCompletesInStrings(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "qa_notes.txt"), []byte("forty-two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "runs", "one"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := startConsole(t, tinkerCmd(t, home))
	c.expect(">>> ")
	c.send(`x = io.read_text("qa_` + "\t")
	c.expect(`io.read_text("qa_notes.txt"`)
	c.send(")\rx\r")
	c.expect(`"forty-two"`)
	c.expect(">>> ")

	c.send(`io.exists("ru` + "\t")
	c.expect(`io.exists("runs/`)
	c.send("on\t")
	c.expect(`io.exists("runs/one/`)
	c.send(`")` + "\r")
	c.expect("True")
	c.expect(">>> ")

	c.send(`m = "tinker-local/tiny-l` + "\t")
	c.expect(`m = "tinker-local/tiny-llama"`)
	c.send("\rm\r")
	c.expect(`"tinker-local/tiny-llama"`)
	c.expect(">>> ")
	c.send("\x04")
}
