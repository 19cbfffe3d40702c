package golden

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBatchInterruptResumes stops `tinker sample --prompts` with Ctrl-C
// (SIGINT) once rows are in the file, then reruns it: the rerun samples only
// the missing rows, and the file holds the same rows as an uninterrupted run.
func TestBatchInterruptResumes(t *testing.T) {
	home := t.TempDir()
	var prompts strings.Builder
	for i := range 30 {
		fmt.Fprintf(&prompts, "%q\n", fmt.Sprintf("Prompt number %d", i))
	}
	if err := os.WriteFile(filepath.Join(home, "prompts.jsonl"), []byte(prompts.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(output string) *exec.Cmd {
		return tinkerCmd(t, home, "--local", "sample", "--prompts", "prompts.jsonl", "--base-model", "tinker-local/tiny-llama",
			"--output", output, "--max-tokens", "16", "--seed", "5", "--concurrency", "1")
	}

	stderr, err := interruptAfterRows(t, run("out.jsonl"), filepath.Join(home, "out.jsonl"))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v, stderr %q", err, stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "Error: ") || !strings.Contains(stderr.String(), "rows still to sample") {
		t.Fatalf("stderr %q", stderr.String())
	}
	kept := lines(t, filepath.Join(home, "out.jsonl"))
	if kept < 2 || kept >= 30 {
		t.Fatalf("%d rows after the interrupt", kept)
	}

	out, err := run("out.jsonl").Output()
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if want := fmt.Sprintf("Wrote %d rows to out.jsonl (%d resumed)\n", 30-kept, kept); !strings.HasSuffix(string(out), want) {
		t.Fatalf("resumed run printed %q, want it to end in %q", out, want)
	}
	if err := run("full.jsonl").Run(); err != nil {
		t.Fatalf("uninterrupted run: %v", err)
	}
	got, want := sortedLines(t, filepath.Join(home, "out.jsonl")), sortedLines(t, filepath.Join(home, "full.jsonl"))
	if !slices.Equal(got, want) {
		t.Fatalf("resumed file differs from the uninterrupted one:\n%s\nvs\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func lines(t *testing.T, path string) int {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

func sortedLines(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	slices.Sort(l)
	return l
}

// TestBatchBuiltinInterruptSaysResume stops a script's sample_batch() with
// SIGINT: besides "interrupted", it says how to resume.
func TestBatchBuiltinInterruptSaysResume(t *testing.T) {
	home := t.TempDir()
	script := `sample_batch("tinker-local/tiny-llama", ["Prompt number %d" % i for i in range(30)], output="out.jsonl", max_tokens=16, seed=5, concurrency=1)` + "\n"
	if err := os.WriteFile(filepath.Join(home, "b.star"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr, _ := interruptAfterRows(t, tinkerCmd(t, home, "--local", "b.star"), filepath.Join(home, "out.jsonl"))
	want := "rows still to sample: call sample_batch again with the same arguments to resume (finished rows are kept in out.jsonl)\ninterrupted\n"
	if !strings.HasSuffix(stderr.String(), want) {
		t.Fatalf("stderr %q, want it to end in %q", stderr.String(), want)
	}
}

// interruptAfterRows starts cmd, sends SIGINT once output holds two rows,
// and returns what it printed on stderr and how it exited.
func interruptAfterRows(t *testing.T, cmd *exec.Cmd, output string) (*bytes.Buffer, error) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for lines(t, output) < 2 {
		select {
		case err := <-done:
			t.Fatalf("the run ended before the interrupt: %v, stderr %q", err, stderr.String())
		case <-time.After(10 * time.Millisecond): // polling the file, not timing the run
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	return &stderr, <-done
}
