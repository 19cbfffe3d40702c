package console

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// metrics.jsonl becomes one curve per numeric field, the loops' figures
// first; unreadable lines are counted and skipped; text from the file is
// escaped on the page, never markup.
func TestLogPage(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run1")
	os.MkdirAll(dir, 0o755)
	lines := `{"step": 1, "loss": 2.5, "learning_rate": 0.001, "note": "</td><script>alert(1)</script>"}
not json
{"step": 2, "loss": 2.0, "learning_rate": 0.0005, "<img src=x onerror=alert(2)>": 7, "accuracy": 0.5}
`
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	// A FIFO named metrics.jsonl is never opened (it would block).
	fifo := filepath.Join(root, "fifo")
	os.MkdirAll(fifo, 0o755)
	if err := syscall.Mkfifo(filepath.Join(fifo, "metrics.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := startServer(t, manifest, root)
	b := newBrowser(t, f.URL)
	b.signIn(aliceKey)
	if _, body := b.do("GET", "/console/logs", nil); !strings.Contains(body, dir) || strings.Contains(body, fifo) {
		t.Fatalf("logs page should list %s only:\n%s", dir, body)
	}
	resp, body := b.do("GET", "/console/logs/0", nil)
	if resp.StatusCode != 200 || strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src") {
		t.Fatalf("log page (%d) carries markup from the file:\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{`data-title="loss" data-points="2"`, `data-title="accuracy" data-points="1"`, "3 lines in metrics.jsonl, 1 of them unreadable (skipped)",
		"&lt;/td&gt;&lt;script&gt;", "&lt;img src=x onerror=alert(2)&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("log page lacks %q", want)
		}
	}
	if strings.Index(body, `data-title="loss"`) > strings.Index(body, `data-title="accuracy"`) || strings.Index(body, `data-title="accuracy"`) > strings.Index(body, `data-title="learning_rate"`) {
		t.Errorf("curves out of order (loss, accuracy, learning_rate):\n%s", body)
	}
	if resp, _ := b.do("GET", "/console/logs/1", nil); resp.StatusCode != 404 {
		t.Errorf("a log index past the list: %d, want 404", resp.StatusCode)
	}
}
