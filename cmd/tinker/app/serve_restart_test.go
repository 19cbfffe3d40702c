package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/term"
)

// TestServeKeepsFuturesAcrossSIGTERM (issue 22): a client submits a
// forward_backward and an optim_step to a real tinker serve process and,
// before collecting them, the process gets SIGTERM. After a restart on the
// same data the two futures answer with exactly the results of an
// uninterrupted server, and the next forward_backward too (the model
// continued bit-identically).
func TestServeKeepsFuturesAcrossSIGTERM(t *testing.T) {
	if args := os.Getenv("TINKER_SERVE_CHILD"); args != "" {
		os.Exit(Main(strings.Fields(args), term.Test(strings.NewReader(""), os.Stdout, os.Stderr)))
	}
	t.Setenv(server.KeysEnv, "")
	ref := startServe(t, t.TempDir())
	rm := ref.newModel()
	want := []string{ref.collect(ref.submit("forward_backward", ref.fb(rm, 1))), ref.collect(ref.submit("optim_step", ref.optim(rm, 2))),
		ref.collect(ref.submit("forward_backward", ref.fb(rm, 3)))}
	ref.stop()

	dir := t.TempDir()
	c := startServe(t, dir)
	model := c.newModel()
	fb := c.submit("forward_backward", c.fb(model, 1))
	opt := c.submit("optim_step", c.optim(model, 2))
	c.stop()
	c = startServe(t, dir)
	defer c.stop()
	got := []string{c.collect(fb), c.collect(opt), c.collect(c.submit("forward_backward", c.fb(model, 3)))}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d after SIGTERM and restart:\n%s\nuninterrupted:\n%s", i, got[i], want[i])
		}
	}
}

type serveProc struct {
	t   *testing.T
	cmd *exec.Cmd
	url string
}

// startServe runs tinker serve over dir in a child process (this test
// binary) and waits for its banner.
func startServe(t *testing.T, dir string) *serveProc {
	t.Helper()
	cmd, url := startTinker(t, "serve --addr 127.0.0.1:0 --data "+dir, "tinker server on ")
	return &serveProc{t: t, cmd: cmd, url: url}
}

// startTinker runs tinker with args in a child process (this test binary)
// and returns it with the first word after banner on its stderr.
func startTinker(t *testing.T, args, banner string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeKeepsFuturesAcrossSIGTERM$")
	cmd.Env = append(append(os.Environ(), env...), "TINKER_SERVE_CHILD="+args)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), banner); ok {
			go io.Copy(io.Discard, stderr)
			return cmd, strings.Fields(rest)[0]
		}
	}
	t.Fatalf("tinker %s did not start", args)
	return nil, ""
}

// stop sends SIGTERM and waits for a clean exit.
func (p *serveProc) stop() {
	p.t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("tinker serve after SIGTERM: %v", err)
	}
}

func (p *serveProc) post(path string, body any) []byte {
	p.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", p.url+"/api/v1/"+path, bytes.NewReader(b))
	req.Header.Set("X-API-Key", "tml-restart-test")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		p.t.Fatalf("POST %s = %d %s", path, resp.StatusCode, out)
	}
	return out
}

func (p *serveProc) submit(path string, body any) string {
	p.t.Helper()
	var f struct {
		RequestID string `json:"request_id"`
	}
	json.Unmarshal(p.post(path, body), &f)
	return f.RequestID
}

// collect polls a future until its final answer.
func (p *serveProc) collect(id string) string {
	p.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		b := p.post("retrieve_future", map[string]any{"request_id": id})
		if !strings.Contains(string(b), `"try_again"`) {
			return string(b)
		}
	}
	p.t.Fatalf("future %s never completed", id)
	return ""
}

func (p *serveProc) newModel() string {
	p.t.Helper()
	var s struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(p.post("create_session", map[string]any{"tags": []string{}, "user_metadata": map[string]string{}, "sdk_version": "0.25.0"}), &s)
	var m struct {
		RequestID string `json:"request_id"`
		ModelID   string `json:"model_id"`
	}
	json.Unmarshal(p.post("create_model", map[string]any{"session_id": s.SessionID, "model_seq_id": 0, "base_model": models.TinyLlama,
		"lora_config": map[string]any{"rank": 4, "seed": 9}}), &m)
	if r := p.collect(m.RequestID); strings.Contains(r, `"error"`) {
		p.t.Fatalf("create_model: %s", r)
	}
	return m.ModelID
}

func (p *serveProc) fb(model string, seq int) map[string]any {
	toks := []int{1, 10, 11, 12, 13, 14}
	return map[string]any{"model_id": model, "seq_id": seq, "forward_backward_input": map[string]any{"loss_fn": "cross_entropy",
		"data": []any{map[string]any{
			"model_input": map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": toks}}},
			"loss_fn_inputs": map[string]any{
				"target_tokens": map[string]any{"data": []int{10, 11, 12, 13, 14, 15}, "dtype": "int64"},
				"weights":       map[string]any{"data": []float32{0, 0, 1, 1, 1, 1}, "dtype": "float32"}}}}}}
}

func (p *serveProc) optim(model string, seq int) map[string]any {
	return map[string]any{"model_id": model, "seq_id": seq, "adam_params": map[string]any{"learning_rate": 1e-2}}
}
