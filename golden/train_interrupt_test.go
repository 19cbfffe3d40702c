package golden

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trainSFT starts `tinker --local train sft` on 40 conversations for many
// steps with log_dir logs in home, extra flags appended; its stderr
// collects in the returned buffer.
func trainSFT(t *testing.T, home string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	args := append([]string{"--local", "train", "sft", "--base-model", "tinker-local/tiny-llama", "--data", "chats.jsonl",
		"--rank", "4", "--batch-size", "4", "--epochs", "200", "--save-every", "3", "--log-dir", "logs"}, extra...)
	cmd := tinkerCmd(t, home, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &stderr
}

// waitSteps waits until logs/metrics.jsonl holds a step (a hang guard of
// a minute, not a timing assertion).
func waitSteps(t *testing.T, home string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(home, "logs", "metrics.jsonl")); bytes.Count(b, []byte("\n")) >= 2 {
			return
		}
	}
	t.Fatal("no step finished within a minute")
}

// exitCode waits for cmd (a hang guard of a minute) and returns its code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatal("still running a minute after Ctrl-C")
	}
	return -1
}

// Ctrl-C in `tinker --local train sft` always ends with the line that
// says how to resume and exit 130 (never "Aborted!", which it printed
// when the Ctrl-C landed right after a periodic save); the rerun says
// where it resumes; a second Ctrl-C quits at once, also with 130.
func TestTrainSFTInterrupt(t *testing.T) {
	home := t.TempDir()
	var rows strings.Builder
	for i := range 40 {
		fmt.Fprintf(&rows, `{"messages": [{"role": "user", "content": "q%d?"}, {"role": "assistant", "content": "answer number %d"}]}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(home, "chats.jsonl"), []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for try := range 3 { // a few Ctrl-Cs, landing at different points of the save cycle
		os.RemoveAll(filepath.Join(home, "logs"))
		cmd, stderr := trainSFT(t, home)
		waitSteps(t, home)
		time.Sleep(time.Duration(try) * 30 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGINT)
		code, out := exitCode(t, cmd), stderr.String()
		if code != 130 || strings.Contains(out, "Aborted!") ||
			!regexp.MustCompile(`(?m)^interrupted after step \d+ of 2000; state saved to tinker://\S+; run the same command again \(with --log-dir logs\) to resume$`).MatchString(out) {
			t.Fatalf("try %d: exit %d, stderr:\n%s", try, code, out)
		}
	}
	cmd, stderr := trainSFT(t, home, "--max-steps", "1")
	if code := exitCode(t, cmd); code != 0 || !regexp.MustCompile(`(?m)^resuming from step \d+ of 2000 \(the state saved in logs\)$`).MatchString(stderr.String()) {
		t.Fatalf("resumed run: exit %d, stderr:\n%s", code, stderr)
	}

	os.RemoveAll(filepath.Join(home, "logs"))
	cmd, stderr = trainSFT(t, home)
	waitSteps(t, home)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Process.Signal(syscall.SIGINT)
	if code := exitCode(t, cmd); code != 130 || strings.Contains(stderr.String(), "Aborted!") {
		t.Fatalf("two Ctrl-Cs: exit %d, stderr:\n%s", code, stderr)
	}
}
