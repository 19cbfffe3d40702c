package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/store"
)

// TestConcurrentClients mixes reads and writes from 16 goroutines and then
// checks the final state is exactly what the acknowledged writes imply.
func TestConcurrentClients(t *testing.T) {
	e := newEnv(t, manifestFor(4, 20), Options{})
	var runs struct {
		TrainingRuns []struct {
			ID string `json:"training_run_id"`
		} `json:"training_runs"`
	}
	e.getJSON("/api/v1/training_runs", 200, &runs)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	deleted := make([]map[string]bool, 16)
	for g := 0; g < 16; g++ {
		deleted[g] = map[string]bool{}
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			run := runs.TrainingRuns[g%4].ID
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			do := func(method, path, body string) int {
				req, _ := http.NewRequest(method, e.url+path, strings.NewReader(body))
				req.Header.Set("X-API-Key", key)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return 0
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			for i := 0; i < 20; i++ {
				switch i % 4 {
				case 0:
					if c := do("GET", "/api/v1/checkpoints?limit=50", ""); c != 200 {
						errs <- fmt.Errorf("list = %d", c)
					}
				case 1:
					if c := do("GET", "/api/v1/training_runs/"+run+"/checkpoints", ""); c != 200 {
						errs <- fmt.Errorf("per-run = %d", c)
					}
				case 2:
					// Each goroutine owns distinct checkpoints: g/4 picks a slot per run.
					name := fmt.Sprintf("%04d", g/4*2+i/8)
					c := do("DELETE", "/api/v1/training_runs/"+run+"/checkpoints/weights/"+name, "")
					if c == 200 {
						deleted[g][run+"/"+name] = true
					} else if c != 404 {
						errs <- fmt.Errorf("delete = %d", c)
					}
				case 3:
					name := fmt.Sprintf("%04d", g/4*2+1)
					c := do("POST", "/api/v1/training_runs/"+run+"/checkpoints/sampler_weights/"+name+"/publish", "")
					if c != 200 && c != 409 {
						errs <- fmt.Errorf("publish = %d", c)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	nDeleted := 0
	for _, m := range deleted {
		nDeleted += len(m)
	}
	var page listJSON
	e.getJSON("/api/v1/checkpoints?limit=1000", 200, &page)
	if page.Cursor.TotalCount != 80-nDeleted || len(page.Checkpoints) != 80-nDeleted {
		t.Errorf("total %d after %d deletes", page.Cursor.TotalCount, nDeleted)
	}
	// The database agrees with memory after a reopen.
	e.srv.Close()
	st, err := store.Open(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := st.ListCheckpoints(OwnerURN(key), t0, 0, 0, func(*store.Checkpoint) {})
	if n != 80-nDeleted {
		t.Errorf("after reopen %d checkpoints, want %d", n, 80-nDeleted)
	}
}

// TestKill9LosesNoAcknowledgedWrite runs the server in a child process (this
// test binary re-executed), saves checkpoints through the futures API until
// killed with SIGKILL, then reopens the data dir and checks every save the
// server acknowledged is there.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	if dir := os.Getenv("TINKER_SERVER_CHILD_DIR"); dir != "" {
		runChildServer(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9LosesNoAcknowledgedWrite$")
	cmd.Env = append(os.Environ(), "TINKER_SERVER_CHILD_DIR="+dir)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	var base string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
			base = u
			break
		}
	}
	if base == "" {
		t.Fatal("child server did not start")
	}
	e := &env{t: t, url: base, http: http.DefaultClient}
	sess := e.newSession()
	var fut struct {
		RequestID string `json:"request_id"`
		ModelID   string `json:"model_id"`
	}
	e.post("/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 0, "base_model": "tinker-local/tiny-llama", "lora_config": map[string]any{"rank": 2}}, &fut)
	e.poll(fut.RequestID)
	model := fut.ModelID

	// Writers: saves (futures), publishes and TTL changes, acknowledged ones recorded.
	var mu sync.Mutex
	acked := map[string]bool{}
	published := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("g%d-%d", g, i)
				req := map[string]any{"model_id": model, "path": name, "seq_id": i + 1}
				code, b, err := rawPost(base, "/api/v1/save_weights_for_sampler", req)
				if err != nil || code != 200 {
					return
				}
				var f struct {
					RequestID string `json:"request_id"`
				}
				json.Unmarshal(b, &f)
				for {
					code, b, err = rawPost(base, "/api/v1/retrieve_future", map[string]any{"request_id": f.RequestID})
					if err != nil || code != 200 {
						return
					}
					if !strings.Contains(string(b), "try_again") {
						break
					}
				}
				if !strings.Contains(string(b), "tinker://") {
					continue
				}
				mu.Lock()
				acked[name] = true
				mu.Unlock()
				if i%3 == 0 {
					code, _, err := rawPost(base, "/api/v1/training_runs/"+model+"/checkpoints/sampler_weights/"+name+"/publish", nil)
					if err == nil && code == 200 {
						mu.Lock()
						published[name] = true
						mu.Unlock()
					}
				}
			}
		}(g)
	}
	// Kill mid-stream once enough writes were acknowledged (others are in flight).
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	close(stop)
	wg.Wait()
	if len(acked) < 5 {
		t.Fatalf("only %d acknowledged saves before the kill; test is not meaningful", len(acked))
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for name := range acked {
		c, ok := st.Checkpoint(model, "sampler_weights", name, now)
		if !ok {
			t.Errorf("acknowledged checkpoint %s lost", name)
			continue
		}
		if published[name] && !c.Public {
			t.Errorf("acknowledged publish of %s lost", name)
		}
	}
	t.Logf("%d acknowledged saves, %d publishes survived kill -9", len(acked), len(published))
}

func rawPost(base, path string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+path, strings.NewReader(string(b)))
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

func runChildServer(dir string) {
	s, err := Open(Options{DataDir: dir, FutureDelay: time.Millisecond, SweepInterval: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	u, err := s.Start("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("LISTENING %s\n", u)
	select {} // until SIGKILL
}
