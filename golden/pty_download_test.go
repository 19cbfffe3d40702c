package golden

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDownloadBarsMatch: on a terminal, download() at the prompt and
// tinker checkpoint download show the same progress: the archive stage,
// then one bar with human sizes and the rate.
func TestDownloadBarsMatch(t *testing.T) {
	home := t.TempDir()
	out, err := tinkerCmd(t, home, "--local", "-c", `save_checkpoint("tinker-local/tiny-llama", name="v1", rank=2, seed=1).tinker_path`).Output()
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	path := strings.TrimSpace(string(out))
	bar := regexp.MustCompile(`Downloading  \[=+\]  [0-9.]+ KB / [0-9.]+ KB  100%  [0-9.]+ [KMG]?B/s`)
	for _, args := range [][]string{
		{"--local", "-c", `download("` + path + `", output="o1")`},
		{"--local", "checkpoint", "download", path, "-o", "o2"},
	} {
		c := startConsole(t, tinkerCmd(t, home, args...))
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%v did not finish", args)
		}
		got := c.from(0)
		if !bar.MatchString(got) {
			t.Errorf("%v: no human-sized bar with a rate in:\n%q", args, got)
		}
		if strings.Contains(got, "Downloading archive") {
			t.Errorf("%v: shows the click-style bar on a terminal:\n%q", args, got)
		}
	}
}
