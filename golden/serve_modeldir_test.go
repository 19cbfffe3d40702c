package golden

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeModelDir (issue 29, item 1): a merged model served by a real
// `tinker serve --model me/qa-merged=DIR` is sampled and evaluated by name
// from separate client processes with default settings: its tokenizer and
// chat renderer come from the server's copy of the directory, not from the
// Hub (HF_ENDPOINT points at a closed port), and the client's Hugging Face
// cache gets no entry for the name.
func TestServeModelDir(t *testing.T) {
	home := t.TempDir()
	offline := []string{"HF_ENDPOINT=http://127.0.0.1:9", "XDG_CACHE_HOME=" + filepath.Join(home, "cache")}
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := tinkerCmd(t, home, args...)
		cmd.Env = append(append(cmd.Env, offline...), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tinker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(nil, "--local", "-c", `save_checkpoint("tinker-local/tiny-llama", name="v1", rank=4, seed=1)`)
	run(nil, "--local", "checkpoint", "export", "tinker://9255f687-75f2-57bf-90f2-93a9b3be6e44:train:0/sampler_weights/v1", "-o", "merged")
	if err := os.WriteFile(filepath.Join(home, "qa.jsonl"), []byte(`{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, _ := startServe(t, home, nil, "--data", filepath.Join(home, "sdata"), "--model", "me/qa-merged=merged")
	client := []string{"TINKER_BASE_URL=http://" + addr, "TINKER_API_KEY=tml-modeldir"}
	run(client, "sample", "--base-model", "me/qa-merged", "--prompt", "hi", "--max-tokens", "2")
	msg := `[{"role": "user", "content": "hi"}]`
	if out := run(client, "-c", `print(len(sample("me/qa-merged", messages=`+msg+`, max_tokens=2).sequences[0].tokens))`); strings.TrimSpace(out) != "2" {
		t.Errorf("messages= by name: %q", out)
	}
	run(client, "-c", `sample("me/qa-merged", messages=`+msg+`, renderer="role_colon", max_tokens=2)`)
	if out := run(client, "eval", "me/qa-merged", "qa.jsonl", "--max-tokens", "2"); !strings.Contains(out, "Score:") {
		t.Errorf("tinker eval by name: %q", out)
	}
	hub, _ := filepath.Glob(filepath.Join(home, "cache", "huggingface", "hub", "models--*"))
	if len(hub) > 0 {
		t.Errorf("the Hugging Face cache gained %v", hub)
	}
}

// startServe starts `tinker serve` on a free loopback port with extra
// environment env, stopped at the end of the test, and returns its address
// once it answers, and the process.
func startServe(t *testing.T, home string, env []string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := tinkerCmd(t, home, append([]string{"serve", "--addr", addr}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	banner := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		banner <- line
	}()
	select {
	case line := <-banner:
		if !strings.Contains(line, "tinker server on http://"+addr) {
			t.Fatalf("banner %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tinker serve did not start")
	}
	return addr, cmd
}
