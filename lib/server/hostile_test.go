package server

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
)

// The tests in this file attack a server on loopback as a hostile user
// would: a second key probing the first one's data, oversized and
// overflowing fields, control characters, floods.

const keyB = "tml-other-user"

// hostileEnv is a server with two configured keys and, for the first key,
// a session, a model and a saved checkpoint.
type hostileEnv struct {
	*env
	session, model string
}

func newHostileEnv(t *testing.T, opts Options) *hostileEnv {
	return newHostileEnvIn(t, t.TempDir(), opts)
}

func newHostileEnvIn(t *testing.T, dir string, opts Options) *hostileEnv {
	opts.APIKeys = []string{key, keyB}
	if opts.Sampler == nil {
		opts.Sampler = fakeSampler{}
	}
	e := &hostileEnv{env: newEnvIn(t, dir, "", opts)}
	var sess struct {
		SessionID string `json:"session_id"`
	}
	e.post("/api/v1/create_session", map[string]any{"tags": []string{"a"}}, &sess)
	var fut struct {
		RequestID string `json:"request_id"`
		ModelID   string `json:"model_id"`
	}
	e.post("/api/v1/create_model", map[string]any{"session_id": sess.SessionID, "model_seq_id": 0, "base_model": "tinker-local/tiny-llama",
		"lora_config": map[string]any{"rank": 4}}, &fut)
	e.poll(fut.RequestID)
	e.session, e.model = sess.SessionID, fut.ModelID
	return e
}

// save saves a checkpoint of the model and returns its tinker path.
func (e *hostileEnv) save(endpoint, name string) string {
	e.t.Helper()
	var fut struct {
		RequestID string `json:"request_id"`
	}
	e.post("/api/v1/"+endpoint, map[string]any{"model_id": e.model, "path": name}, &fut)
	_, b, _ := e.poll(fut.RequestID)
	var res struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Path == "" {
		e.t.Fatalf("%s %s = %s", endpoint, name, b)
	}
	return res.Path
}

func TestPagingOverflowIsRefused(t *testing.T) {
	e := newHostileEnv(t, Options{})
	for _, path := range []string{"sessions", "checkpoints", "training_runs", "training_runs?project_id=p"} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		for _, q := range []string{"limit=9223372036854775807&offset=1", "limit=1&offset=9223372036854775807", "limit=99999999999999999999"} {
			code, b, _ := e.do("GET", "/api/v1/"+path+sep+q, nil)
			if code != 400 || !strings.Contains(string(b), "must be between 0 and") {
				t.Errorf("GET %s%s%s = %d %s, want 400 naming the limit", path, sep, q, code, b)
			}
		}
		if code, b, _ := e.do("GET", "/api/v1/"+path+sep+"limit=10000&offset=2147483648", nil); code != 200 {
			t.Errorf("GET %s at the limits = %d %s", path, code, b)
		}
	}
}

func TestFuturesBelongToTheirCreator(t *testing.T) {
	e := newHostileEnv(t, Options{})
	var fut struct {
		RequestID string `json:"request_id"`
	}
	e.post("/api/v1/asample", map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": map[string]any{"chunks": []any{map[string]any{"tokens": []int{5}}}}}, &fut)
	if !regexp.MustCompile(`^fut-[0-9a-f]{32}$`).MatchString(fut.RequestID) {
		t.Errorf("future id %q is not 128 random bits", fut.RequestID)
	}
	unknown := "fut-00000000000000000000000000000000"
	codeB, bodyB, _ := e.do("POST", "/api/v1/retrieve_future", map[string]any{"request_id": fut.RequestID}, "X-API-Key", keyB)
	codeU, bodyU, _ := e.do("POST", "/api/v1/retrieve_future", map[string]any{"request_id": unknown}, "X-API-Key", keyB)
	if codeB != 410 || codeU != 410 || strings.ReplaceAll(string(bodyB), fut.RequestID, unknown) != string(bodyU) {
		t.Errorf("another user's future = %d %s; an unknown one = %d %s; want the same 410", codeB, bodyB, codeU, bodyU)
	}
	if _, b, _ := e.poll(fut.RequestID); !strings.Contains(string(b), `"sequences"`) {
		t.Errorf("owner's result = %s", b)
	}
}

func TestAccessibleRunHidesPrivateCheckpoints(t *testing.T) {
	e := newHostileEnv(t, Options{})
	pub := e.save("save_weights", "public-one")
	pubS := e.save("save_weights_for_sampler", "public-s")
	for _, p := range []string{pub, pubS} {
		path := strings.Replace(strings.TrimPrefix(p, "tinker://"), "/", "/checkpoints/", 1)
		if code, b, _ := e.do("POST", "/api/v1/training_runs/"+path+"/publish", nil); code != 200 {
			t.Fatalf("publish %s = %d %s", p, code, b)
		}
	}
	e.clk.Add(60e9)
	e.save("save_weights", "secret-later")
	e.save("save_weights_for_sampler", "secret-s")
	check := func(what string, b []byte) {
		if strings.Contains(string(b), "secret") {
			t.Errorf("%s shows a private checkpoint to another user: %s", what, b)
		}
		if !strings.Contains(string(b), "public-one") || !strings.Contains(string(b), "public-s") {
			t.Errorf("%s does not show the public checkpoints: %s", what, b)
		}
	}
	_, b, _ := e.do("GET", "/api/v1/training_runs/"+e.model+"?access_scope=accessible", nil, "X-API-Key", keyB)
	check("get run", b)
	_, b, _ = e.do("GET", "/api/v1/training_runs?access_scope=accessible", nil, "X-API-Key", keyB)
	check("list runs", b)
	if _, b, _ := e.do("GET", "/api/v1/training_runs/"+e.model, nil); !strings.Contains(string(b), "secret-later") {
		t.Errorf("the owner does not see the latest checkpoint: %s", b)
	}
}

// TestOtherUserIsRefusedEverywhere calls every endpoint that names a
// resource of the first user with the second user's key.
func TestOtherUserIsRefusedEverywhere(t *testing.T) {
	e := newHostileEnv(t, Options{})
	p := e.save("save_weights", "mine")
	ps := e.save("save_weights_for_sampler", "mine-s")
	ck := "/api/v1/training_runs/" + strings.Replace(strings.TrimPrefix(p, "tinker://"), "/", "/checkpoints/", 1)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/v1/training_runs/" + e.model, nil},
		{"GET", "/api/v1/training_runs/" + e.model + "/checkpoints", nil},
		{"DELETE", ck, nil},
		{"GET", ck + "/archive", nil},
		{"POST", ck + "/publish", nil},
		{"DELETE", ck + "/publish", nil},
		{"PUT", ck + "/ttl", map[string]any{"ttl_seconds": 60}},
		{"POST", "/api/v1/weights_info", map[string]any{"tinker_path": p}},
		{"GET", "/api/v1/sessions/" + e.session, nil},
		{"PUT", "/api/v1/sessions/" + e.session + "/project", map[string]any{"project_id": "x"}},
		{"GET", "/api/v1/sessions/" + e.session + "/trace_export", nil},
		{"GET", "/api/v1/samplers/" + e.session + ":sample:0", nil},
		{"POST", "/api/v1/session_heartbeat", map[string]any{"session_id": e.session}},
		{"POST", "/api/v1/create_model", map[string]any{"session_id": e.session, "model_seq_id": 5, "base_model": "tinker-local/tiny-llama"}},
		{"POST", "/api/v1/get_info", map[string]any{"model_id": e.model}},
		{"POST", "/api/v1/save_weights", map[string]any{"model_id": e.model, "path": "x"}},
		{"POST", "/api/v1/save_weights_for_sampler", map[string]any{"model_id": e.model, "path": "x"}},
		{"POST", "/api/v1/load_weights", map[string]any{"model_id": e.model, "path": p}},
		{"POST", "/api/v1/create_sampling_session", map[string]any{"session_id": e.session, "sampling_session_seq_id": 9, "model_path": ps}},
		{"POST", "/api/v1/asample", map[string]any{"model_path": ps, "prompt": map[string]any{"chunks": []any{map[string]any{"tokens": []int{1}}}}}},
	} {
		code, b, _ := e.do(c.method, c.path, c.body, "X-API-Key", keyB)
		if code != 404 {
			t.Errorf("%s %s by another user = %d %s, want 404", c.method, c.path, code, b)
		}
	}
	if _, b, _ := e.do("GET", "/api/v1/training_runs/"+e.model+"/checkpoints", nil); !strings.Contains(string(b), "mine") {
		t.Errorf("the owner's checkpoints changed: %s", b)
	}
}

// TestOversizedFields sends, to every endpoint that takes a size, a value
// past its limit (and past int64 where the field is an integer): each must
// be a 4xx naming the field, never a crash or an allocation of that size.
func TestOversizedFields(t *testing.T) {
	e := newHostileEnv(t, Options{})
	prompt := func(n int) map[string]any {
		return map[string]any{"chunks": []any{map[string]any{"tokens": make([]int, n)}}}
	}
	long := strings.Repeat("a", maxStringLen+1)
	meta := map[string]string{}
	for i := 0; i <= maxMetadataEntries; i++ {
		meta[fmt.Sprint(i)] = "v"
	}
	for _, c := range []struct {
		path  string
		body  any
		field string
	}{
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "num_samples": 1 << 40, "prompt": prompt(1)}, "num_samples"},
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "num_samples": 0, "prompt": prompt(1)}, "num_samples"},
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": prompt(1), "sampling_params": map[string]any{"max_tokens": 1 << 62}}, "max_tokens"},
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": prompt(1), "sampling_params": map[string]any{"max_tokens": 1 << 19}}, "context"},
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": prompt(1), "topk_prompt_logprobs": 1 << 40}, "topk_prompt_logprobs"},
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": prompt(maxPromptTokens + 1)}, "prompt length"},
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": map[string]any{"chunks": []any{map[string]any{"tokens": []int{1 << 40}}}}}, "vocabulary"},
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": prompt(0)}, "prompt is empty"},
		{"asample", map[string]any{"base_model": "tinker-local/tiny-llama", "num_samples": "1e999", "prompt": prompt(1)}, "num_samples"},
		{"create_model", map[string]any{"session_id": e.session, "model_seq_id": 1, "base_model": "tinker-local/tiny-llama", "lora_config": map[string]any{"rank": 100000000}}, "lora_config.rank"},
		{"create_model", map[string]any{"session_id": e.session, "model_seq_id": 1, "base_model": "tinker-local/tiny-llama", "user_metadata": meta}, "user_metadata"},
		{"create_session", map[string]any{"user_metadata": map[string]string{"k": long}}, "user_metadata[k]"},
		{"create_session", map[string]any{"tags": []string{long}}, "tags"},
		{"save_weights", map[string]any{"model_id": e.model, "path": "t", "ttl_seconds": 9300000000}, "ttl_seconds"},
		{"save_weights_for_sampler", map[string]any{"model_id": e.model, "path": "t", "ttl_seconds": int64(1) << 62}, "ttl_seconds"},
		{"save_weights", map[string]any{"model_id": e.model, "path": strings.Repeat("n", maxNameLen+1)}, "checkpoint name"},
		{"save_weights", map[string]any{"model_id": e.model, "path": strings.Repeat("é", 40)}, "once non-ASCII characters are escaped"},
		{"retrieve_future", map[string]any{"request_id": strings.Repeat("x", maxIDLen+1)}, "request_id"},
	} {
		code, b, _ := e.do("POST", "/api/v1/"+c.path, c.body)
		if code/100 != 4 || !strings.Contains(string(b), c.field) {
			t.Errorf("%s %.120v = %d %.300s, want a 4xx naming %s", c.path, c.body, code, b, c.field)
		}
	}
	ck := "/api/v1/training_runs/" + strings.Replace(strings.TrimPrefix(e.save("save_weights", "ttl"), "tinker://"), "/", "/checkpoints/", 1)
	if code, b, _ := e.do("PUT", ck+"/ttl", map[string]any{"ttl_seconds": 9300000000}); code != 400 || !strings.Contains(string(b), "ttl_seconds") {
		t.Errorf("set ttl 9300000000 = %d %s", code, b)
	}
	// A body past the limit is refused before it is decoded.
	big := map[string]any{"model_id": e.model, "path": strings.Repeat("x", maxBodyBytes)}
	if code, b, _ := e.do("POST", "/api/v1/save_weights", big); code != 413 || !strings.Contains(string(b), fmt.Sprint(maxBodyBytes)) {
		t.Errorf("oversized body = %d %.200s", code, b)
	}
}

func TestControlCharactersAreRejected(t *testing.T) {
	e := newHostileEnv(t, Options{})
	for _, bad := range []string{"a\x1b[31m", "bell\a", "new\nline", "del\x7f", "c1\u009b", "rlo\u202e", "pct%41", "q?x", "h#x"} {
		for _, c := range []struct {
			path  string
			body  any
			field string
		}{
			{"save_weights", map[string]any{"model_id": e.model, "path": bad}, "checkpoint name"},
			{"create_session", map[string]any{"user_metadata": map[string]string{"k": bad}}, "user_metadata"},
			{"create_session", map[string]any{"tags": []string{bad}}, "tags"},
			{"create_model", map[string]any{"session_id": e.session, "model_seq_id": 1, "base_model": "tinker-local/tiny-llama", "user_metadata": map[string]string{bad: "v"}}, "user_metadata"},
		} {
			if strings.ContainsAny(bad, "%?#") && c.field != "checkpoint name" {
				continue // only names become paths
			}
			code, b, _ := e.do("POST", "/api/v1/"+c.path, c.body)
			if code != 400 || !strings.Contains(string(b), c.field) {
				t.Errorf("%s with %q = %d %s, want 400 naming %s", c.path, bad, code, b, c.field)
			}
		}
	}
	code, b, _ := e.do("PUT", "/api/v1/sessions/"+e.session+"/project", map[string]any{"project_id": "p\x1b"})
	if code != 400 || !strings.Contains(string(b), "project_id") {
		t.Errorf("project with ESC = %d %s", code, b)
	}
	e.save("save_weights", "ünïcode ok")
}

type panicSampler struct{}

func (panicSampler) Sample(context.Context, SampleRequest) (*engine.SampleResponse, error) {
	panic("sampler bug")
}

func TestPanicInFutureIsAServerFailure(t *testing.T) {
	e := newHostileEnv(t, Options{Sampler: panicSampler{}})
	var fut struct {
		RequestID string `json:"request_id"`
	}
	e.post("/api/v1/asample", map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": map[string]any{"chunks": []any{map[string]any{"tokens": []int{5}}}}}, &fut)
	if _, b, _ := e.poll(fut.RequestID); !strings.Contains(string(b), `"category":"server"`) || strings.Contains(string(b), "sampler bug") {
		t.Errorf("panicking sampler = %s", b)
	}
	if code, _, _ := e.do("GET", "/api/v1/healthz", nil); code != 200 {
		t.Error("server is down after a panic")
	}
}

func TestErrorsDoNotRevealPaths(t *testing.T) {
	e := newHostileEnv(t, Options{})
	msg := "open " + e.dir + "/checkpoints/x: no space left on device"
	if got := e.srv.scrub(msg); strings.Contains(got, e.dir) || !strings.Contains(got, "<data dir>/checkpoints/x") {
		t.Errorf("scrub(%q) = %q", msg, got)
	}
}

// TestFuturesFlood: one user's flood of requests is stopped at the per-user
// limit with a 429 that says what to do, other users are unaffected, and
// collected futures free their slots.
func TestFuturesFlood(t *testing.T) {
	e := newHostileEnv(t, Options{})
	body := map[string]any{"base_model": "tinker-local/tiny-llama", "prompt": map[string]any{"chunks": []any{map[string]any{"tokens": []int{5}}}}}
	ids := make(chan string, maxFuturesPerUser+64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < (maxFuturesPerUser+64)/8; i++ {
				code, b, _ := e.do("POST", "/api/v1/asample", body)
				switch {
				case code == 200:
					var f struct {
						RequestID string `json:"request_id"`
					}
					json.Unmarshal(b, &f)
					ids <- f.RequestID
				case code == 429 && strings.Contains(string(b), "retrieve_future"):
					mu.Lock()
					refused++
					mu.Unlock()
				default:
					t.Errorf("flood request = %d %s", code, b)
				}
			}
		}()
	}
	wg.Wait()
	close(ids)
	if refused == 0 || len(ids) > maxFuturesPerUser {
		t.Errorf("%d accepted, %d refused; want at most %d accepted", len(ids), refused, maxFuturesPerUser)
	}
	if code, b, _ := e.do("POST", "/api/v1/asample", body, "X-API-Key", keyB); code != 200 {
		t.Errorf("another user during the flood = %d %s", code, b)
	}
	first := <-ids
	e.poll(first)
	if code, b, _ := e.do("POST", "/api/v1/asample", body); code != 200 {
		t.Errorf("after collecting one result = %d %s", code, b)
	}
	// Collected futures are freed after the grace period; uncollected ones stay.
	e.srv.futures.collect(time.Now().Add(futureGrace + time.Second))
	if f := e.srv.futures.lookup(OwnerURN(key), first); f != nil {
		t.Error("a collected future outlived its grace period")
	}
	if f := e.srv.futures.lookup(OwnerURN(key), <-ids); f == nil {
		t.Error("an uncollected future was freed early")
	}
}

// TestScrubRelativeDataDir (issue 31, item 27): with --data d the data
// directory is hidden where it stands as a path, and every other "d" in a
// message stays ("not found" was "not foun<data dir>").
func TestScrubRelativeDataDir(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := Open(Options{DataDir: "d", SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	abs, _ := filepath.Abs("d")
	for in, want := range map[string]string{
		"Checkpoint not found: open d/checkpoints/x: denied": "Checkpoint not found: open <data dir>/checkpoints/x: denied",
		"read " + abs + "/runs.db failed":                    "read <data dir>/runs.db failed",
		"data dir d is full; added d2 and dd":                "data dir <data dir> is full; added d2 and dd",
	} {
		if got := s.scrub(in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
}
