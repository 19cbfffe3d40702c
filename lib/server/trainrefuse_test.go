package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// Training requests refused as a whole: an optim_step that would make the
// adapter non-finite, and bodies refused while they are decoded (issue 18).

// TestPoisonousOptimStepIsRefusedAndUndone: adam_params whose metrics stay
// finite but whose update overflows the weights fail the optim_step future
// with a user error, and leave the model as before the step: a forward
// gives the same bits as before, and a sane step with the same gradients
// still works.
func TestPoisonousOptimStepIsRefusedAndUndone(t *testing.T) {
	e := newTrainEnv(t, Options{})
	for i, adam := range []map[string]any{
		{"learning_rate": 1e-2, "eps": 0},
		{"learning_rate": 1e308},
		{"learning_rate": 1e-2, "weight_decay": 1e308},
	} {
		model := e.newTinyModel(int64(10 + i))
		fwd := func(seq int) []byte {
			return e.result("/api/v1/forward", map[string]any{"model_id": model, "seq_id": seq, "forward_input": jsonForward(sft("ab", "cd"), false)})
		}
		before := fwd(1)
		e.result("/api/v1/forward_backward", fbBody(model, 2))
		b := e.result("/api/v1/optim_step", map[string]any{"model_id": model, "seq_id": 3, "adam_params": adam})
		var f struct{ Error, Category string }
		if err := json.Unmarshal(b, &f); err != nil || f.Category != "user" ||
			!strings.Contains(f.Error, "not a finite number") || !strings.Contains(f.Error, "load_state") || !strings.Contains(f.Error, "not applied") {
			t.Errorf("optim_step %v = %s, want a user error naming the non-finite value", adam, b)
		}
		if after := fwd(4); !bytes.Equal(after, before) {
			t.Errorf("optim_step %v changed the model:\nbefore %s\nafter  %s", adam, before, after)
		}
		b = e.result("/api/v1/optim_step", optimBody(model, 5))
		var ok struct{ Metrics map[string]float64 }
		if json.Unmarshal(b, &ok); ok.Metrics["unclipped_grad_l2:mean"] <= 0 {
			t.Errorf("a sane optim_step after the refused one = %s, want the kept gradients applied", b)
		}
		if after := fwd(6); bytes.Equal(after, before) {
			t.Errorf("the sane optim_step after %v did not change the model", adam)
		}
	}
}

// TestDecodeRefusalsUseUpSeqID: a request refused while its body is
// decoded, once its seq_id could be read, uses that seq_id up (as other
// 400s do), so the client's next request does not wait out the gap
// timeout; sent again it is refused as used.
func TestDecodeRefusalsUseUpSeqID(t *testing.T) {
	e := newTrainEnv(t, Options{})
	model := e.newTinyModel(20)
	badShape := fbBody(model, 1)
	inputs := badShape["forward_backward_input"].(map[string]any)["data"].([]any)[0].(map[string]any)["loss_fn_inputs"].(map[string]any)
	inputs["target_tokens"].(map[string]any)["shape"] = []int{1, 2, 3}
	noInput := map[string]any{"model_id": model, "seq_id": 2}
	noAdam := map[string]any{"model_id": model, "seq_id": 3}
	for _, c := range []struct {
		path string
		body map[string]any
		code int
	}{
		{"/api/v1/forward_backward", badShape, 400},
		{"/api/v1/forward_backward", noInput, 422},
		{"/api/v1/optim_step", noAdam, 422},
	} {
		if code, b, _ := e.do("POST", c.path, c.body); code != c.code {
			t.Fatalf("POST %s %v = %d %s, want %d", c.path, c.body, code, b, c.code)
		}
	}
	// The protobuf form the SDK sends: an image chunk is refused.
	pb, _ := tinkerproto.Marshal(&tinkerproto.ForwardBackwardRequest{ModelId: model, SeqId: 4, LossFn: "cross_entropy",
		Data: []*tinkerproto.Datum{{ModelInput: []*tinkerproto.Chunk{{Chunk: &tinkerproto.Chunk_Image{Image: &tinkerproto.ImageChunk{Format: "png"}}}}}}})
	req, _ := http.NewRequest("POST", e.url+"/api/v1/forward_backward", bytes.NewReader(pb))
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("protobuf body with an image chunk = %d, want 400", resp.StatusCode)
	}
	for seq := 1; seq <= 4; seq++ {
		code, b, _ := e.do("POST", "/api/v1/forward_backward", fbBody(model, seq))
		if code != 400 || !strings.Contains(string(b), "used already") {
			t.Errorf("seq_id %d after its refusal = %d %s, want 400 used already", seq, code, b)
		}
	}
	if b := e.result("/api/v1/forward_backward", fbBody(model, 5)); !json.Valid(b) || strings.Contains(string(b), `"error"`) {
		t.Errorf("the next seq_id = %s", b)
	}
}
