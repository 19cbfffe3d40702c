package server

import (
	"strings"
	"testing"
)

// TestIdempotentRetryReplays: a create_model sent again with the same
// X-Idempotency-Key (its answer was lost) gets the first answer, the same
// future, instead of a 409 for the used model_seq_id; another key is a
// new request; polls are not remembered.
func TestIdempotentRetryReplays(t *testing.T) {
	e := newEnv(t, "", Options{})
	sess := e.newSession()
	body := map[string]any{"session_id": sess.SessionID, "model_seq_id": 0, "base_model": "tinker-local/tiny-llama",
		"lora_config": map[string]any{"rank": 2}, "type": "create_model"}
	k1 := "stainless-python-retry-11111111-1111-4111-8111-111111111111"
	c1, b1, _ := e.do("POST", "/api/v1/create_model", body, "X-Idempotency-Key", k1)
	c2, b2, _ := e.do("POST", "/api/v1/create_model", body, "X-Idempotency-Key", k1)
	if c1 != 200 || c2 != 200 || string(b1) != string(b2) {
		t.Errorf("same key: %d %s then %d %s, want the same answer", c1, b1, c2, b2)
	}
	c3, b3, _ := e.do("POST", "/api/v1/create_model", body, "X-Idempotency-Key", "stainless-python-retry-other")
	if c3 != 409 || !strings.Contains(string(b3), "already exists") {
		t.Errorf("another key: %d %s, want 409", c3, b3)
	}
	if n := e.srv.idem.n; n != 1 {
		t.Errorf("%d answers remembered, want 1 (refusals are not)", n)
	}
	e.do("POST", "/api/v1/retrieve_future", map[string]any{"request_id": "x"}, "X-Idempotency-Key", k1)
	if n := e.srv.idem.n; n != 1 {
		t.Errorf("a poll was remembered (%d answers)", n)
	}
}
