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

// trainSFTCmd is `tinker --local train sft` on chats.jsonl for many steps
// with log_dir logs in home, extra flags appended.
func trainSFTCmd(t *testing.T, home string, extra ...string) *exec.Cmd {
	args := append([]string{"--local", "train", "sft", "--base-model", "tinker-local/tiny-llama", "--data", "chats.jsonl",
		"--rank", "4", "--batch-size", "4", "--epochs", "200", "--save-every", "3", "--log-dir", "logs"}, extra...)
	return tinkerCmd(t, home, args...)
}

// exitCode is the exit status Wait reported.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
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
	metrics := filepath.Join(home, "logs", "metrics.jsonl")
	resume := regexp.MustCompile(`(?m)^interrupted after step \d+ of 2000; state saved to tinker://\S+; run the same command again \(with --log-dir logs\) to resume$`)
	for try := range 3 { // Ctrl-Cs landing at different points of the save cycle
		os.RemoveAll(filepath.Join(home, "logs"))
		stderr, err := interruptAfterRows(t, trainSFTCmd(t, home), metrics)
		if code, out := exitCode(err), stderr.String(); code != 130 || strings.Contains(out, "Aborted!") || !resume.MatchString(out) {
			t.Fatalf("try %d: exit %d, stderr:\n%s", try, code, out)
		}
	}
	var stderr bytes.Buffer
	cmd := trainSFTCmd(t, home, "--max-steps", "1")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if !regexp.MustCompile(`(?m)^resuming from step \d+ of 2000 \(the state saved in logs\)$`).MatchString(stderr.String()) || err != nil {
		t.Fatalf("resumed run: %v, stderr:\n%s", err, &stderr)
	}

	os.RemoveAll(filepath.Join(home, "logs"))
	stderr.Reset()
	cmd = trainSFTCmd(t, home)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for lines(t, metrics) < 2 {
		time.Sleep(10 * time.Millisecond) // polling the file, not timing the run
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Process.Signal(syscall.SIGINT)
	if code := exitCode(cmd.Wait()); code != 130 || strings.Contains(stderr.String(), "Aborted!") {
		t.Fatalf("two Ctrl-Cs: exit %d, stderr:\n%s", code, &stderr)
	}
}
