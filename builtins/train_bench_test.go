package builtins

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tinkerproto"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The training benchmarks run one step (forward_backward then optim_step
// on one 48-token datum of tiny-llama) against an in-process local server
// whose futures are ready after 1ms: through the shell (Starlark calling
// the training client), and as the same requests sent with net/http and
// polled in a tight loop. The difference is the shell's overhead per step.

const benchKey = "tml-bench"

type urlBackend struct{ c *tinkerapi.Client }

func (u urlBackend) Name() string                       { return "bench" }
func (u urlBackend) Client() (*tinkerapi.Client, error) { return u.c, nil }

func benchServer(b *testing.B) string {
	pool := &engine.Pool{}
	s, err := server.Open(server.Options{DataDir: b.TempDir(), SweepInterval: -1, FutureDelay: time.Millisecond,
		PollHold: 500 * time.Millisecond, Sampler: server.EngineSampler(pool), Engine: pool})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	b.Cleanup(func() { hs.Close(); s.Close() })
	return hs.URL
}

func benchThread(b *testing.B, url string) (*starlark.Thread, starlark.StringDict) {
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: url, APIKey: benchKey})
	if err != nil {
		b.Fatal(err)
	}
	env := &Env{Now: time.Now, Notices: io.Discard, Backend: urlBackend{c}}
	b.Cleanup(env.Close)
	th := &starlark.Thread{Name: "bench"}
	Attach(th, env)
	return th, Universe()
}

const benchSetup = `
tc = training_client("tinker-local/tiny-llama", rank=8, seed=1)
d = datum(list(range(1, 50)))
def step():
    tc.forward_backward([d])
    tc.optim_step(learning_rate=1e-4)
`

func BenchmarkTrainStepShell(b *testing.B) {
	th, u := benchThread(b, benchServer(b))
	g, err := starlark.ExecFileOptions(&syntax.FileOptions{}, th, "bench.star", benchSetup, u)
	if err != nil {
		b.Fatal(err)
	}
	step := g["step"]
	if _, err := starlark.Call(th, step, nil, nil); err != nil { // warm the model up
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := starlark.Call(th, step, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// rawPost sends one request and returns the decoded JSON answer.
func rawPost(b *testing.B, url, path, ctype string, body []byte) map[string]any {
	req, _ := http.NewRequest("POST", url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("X-API-Key", benchKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 && resp.StatusCode != 408 {
		b.Fatalf("%s: %d %s", path, resp.StatusCode, data)
	}
	json.Unmarshal(data, &out)
	if out == nil {
		out = map[string]any{}
	}
	out["_status"] = resp.StatusCode
	return out
}

// rawAwait submits and polls retrieve_future until the result is there.
func rawAwait(b *testing.B, url, path, ctype string, body []byte) {
	h := rawPost(b, url, path, ctype, body)
	id, _ := h["request_id"].(string)
	poll, _ := json.Marshal(map[string]any{"request_id": id, "allow_metadata_only": false})
	for {
		r := rawPost(b, url, "/api/v1/retrieve_future", "application/json", poll)
		if r["_status"] == 200 && r["type"] != "try_again" {
			return
		}
	}
}

func BenchmarkTrainStepHTTP(b *testing.B) {
	url := benchServer(b)
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: url, APIKey: benchKey})
	if err != nil {
		b.Fatal(err)
	}
	sess, err := c.CreateSession(b.Context(), tinkerapi.SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	seed := int64(1)
	modelID, err := sess.CreateModel(b.Context(), "tinker-local/tiny-llama", tinkerapi.LoraConfig{Rank: 8, Seed: &seed, TrainMLP: true, TrainAttn: true, TrainUnembed: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	toks := make([]int, 49)
	targets := make([]int64, 49)
	for i := range toks {
		toks[i], targets[i] = i+1, int64(i+2)
	}
	packed := make([]byte, 8*len(targets))
	for i, t := range targets {
		for k := range 8 {
			packed[8*i+k] = byte(uint64(t) >> (8 * k))
		}
	}
	seq := int32(1) // create_model took seq id 0
	step := func() {
		req := &tinkerproto.ForwardBackwardRequest{ModelId: modelID, SeqId: seq, LossFn: "cross_entropy",
			Data: []*tinkerproto.Datum{{
				ModelInput: []*tinkerproto.Chunk{{Chunk: &tinkerproto.Chunk_EncodedText{EncodedText: &tinkerproto.EncodedTextChunk{Tokens: tinkerproto.PackInt32(toks)}}}},
				LossFnInputs: map[string]*tinkerproto.Tensor{"target_tokens": {Shape: []int64{int64(len(targets))}, Dtype: tinkerproto.DType_DTYPE_INT64,
					Encoding: &tinkerproto.Tensor_Dense{Dense: packed}}},
			}}}
		body, err := tinkerproto.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		rawAwait(b, url, "/api/v1/forward_backward", "application/x-protobuf", body)
		opt, _ := json.Marshal(map[string]any{"adam_params": tinkerapi.DefaultAdamParams(), "model_id": modelID, "seq_id": seq + 1, "type": "optim_step"})
		rawAwait(b, url, "/api/v1/optim_step", "application/json", opt)
		seq += 2
	}
	step()
	b.ResetTimer()
	for range b.N {
		step()
	}
}
