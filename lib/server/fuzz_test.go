package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
)

// fuzzEndpoints are the POST endpoints that decode a request body.
var fuzzEndpoints = []string{"client/config", "telemetry", "weights_info", "create_session", "session_heartbeat",
	"create_model", "get_info", "save_weights", "save_weights_for_sampler", "create_sampling_session", "asample",
	"retrieve_future", "cancel_future", "load_weights", "forward_backward", "forward", "optim_step"}

// FuzzRequestBodies sends arbitrary bodies, as JSON and as protobuf, to
// every endpoint that decodes one: whatever arrives, the server answers
// without panicking and never with a 500 (a hostile body is the caller's
// mistake, not the server's). The seeds run in every `go test`.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `{"model_id": 1}`, `{"num_samples": 1099511627776, "prompt": {"chunks": []}}`,
		`{"session_id": "x", "model_seq_id": -1, "base_model": "tinker-local/tiny-llama", "lora_config": {"rank": 100000000}}`,
		`{"forward_backward_input": {"data": [{"model_input": {"chunks": [{"type": "encoded_text", "tokens": [1, 2]}]}, "loss_fn_inputs": {}}], "loss_fn": "cross_entropy"}}`,
		`{"adam_params": {"learning_rate": 1e308, "beta1": 2}}`, `{"path": "tinker://../../x/weights/y"}`,
		`{"ttl_seconds": 9300000000, "path": "a\u001b[2J"}`, "\x0a\x05\x0a\x03abc\x10\xff\xff\xff\xff\x0f",
	} {
		for i := range fuzzEndpoints {
			f.Add(uint8(i), false, []byte(seed))
			f.Add(uint8(i), true, []byte(seed))
		}
	}
	pool := &engine.Pool{}
	s, err := Open(Options{DataDir: f.TempDir(), SweepInterval: -1, Sampler: EngineSampler(pool), Engine: pool})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, which uint8, proto bool, body []byte) {
		path := "/api/v1/" + fuzzEndpoints[int(which)%len(fuzzEndpoints)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("X-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		if proto {
			req.Header.Set("Content-Type", "application/x-protobuf")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Errorf("POST %s %q = %d %s", path, body, rec.Code, rec.Body.Bytes())
		}
	})
}
