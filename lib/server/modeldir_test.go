package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/hfhub"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

// writeHFDir writes a tiny model out as a Hugging Face model directory
// with its tokenizer.
func writeHFDir(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	c, ts, err := engine.TinyTensors(name)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.HFConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out []safetensors.Tensor
	for n, x := range ts {
		st, err := safetensors.FromFloat32(n, safetensors.F32, x.Shape, x.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	if err := safetensors.WriteDir(dir, [][]safetensors.Tensor{out}); err != nil {
		t.Fatal(err)
	}
	for file, b := range map[string][]byte{"config.json": cfg, "tokenizer.json": tokenizer.TinyJSON()} {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestModelDirUnderOwnName: a model directory registered under a name
// outside the catalog is offered, trains, samples its trained checkpoint,
// and has its tokenizer served for the Hub clients; also a Qwen3-MoE one.
func TestModelDirUnderOwnName(t *testing.T) {
	for name, tiny := range map[string]string{"me/my-qwen": models.TinyQwen3, "me/my-qwen-moe": models.TinyQwen3MoE, "me/my-gpt-oss": models.TinyGptOss} {
		t.Run(name, func(t *testing.T) { checkModelDir(t, name, tiny) })
	}
}

func checkModelDir(t *testing.T, name, tiny string) {
	dir := writeHFDir(t, tiny)
	if err := RegisterModelDir(name, dir); err != nil {
		t.Fatal(err)
	}
	if err := RegisterModelDir(name, dir); err != nil {
		t.Fatalf("registering again: %v", err)
	}
	if err := RegisterModelDir("me/broken", t.TempDir()); err == nil || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("a directory without config.json: %v", err)
	}
	pool := &engine.Pool{Dirs: map[string]string{name: dir}}
	e := newEnv(t, "", Options{Sampler: EngineSampler(pool), Engine: pool, FutureDelay: time.Millisecond})
	_, caps, _ := e.do("GET", "/api/v1/get_server_capabilities", nil)
	if !strings.Contains(string(caps), `"model_name":"`+name+`"`) {
		t.Errorf("capabilities do not list %s: %s", name, caps)
	}
	te := &trainEnv{env: e, sess: e.session(key)}
	ctx := context.Background()
	tc, err := te.sess.CreateTrainingClient(ctx, name, tinkerapi.LoraConfig{Rank: 4, Seed: new(int64(1)), TrainAttn: true, TrainMLP: true, TrainUnembed: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data := []tinkerapi.Datum{sft("Q:", " ok")}
	first := te.step(tc, data, 3e-3)
	for range 5 {
		if loss := te.step(tc, data, 3e-3); loss >= first {
			t.Errorf("loss %v did not fall below %v", loss, first)
		}
	}
	path, err := tc.SaveWeightsForSampler(ctx, "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := te.sess.CreateSamplingSession(ctx, "", path)
	if err != nil {
		t.Fatal(err)
	}
	req := tinkerapi.NewSampleRequest([]int{models.TinyBOS, 'Q', ':'})
	req.MaxTokens = 3
	if res, err := te.sess.Sample(ctx, sid, req); err != nil || len(res.Sequences[0].Tokens) == 0 {
		t.Fatalf("sample: %v %+v", err, res)
	}
	hub := &hfhub.Hub{Endpoint: e.url, CacheDir: t.TempDir(), Client: http.DefaultClient}
	if _, err := hub.Resolve(ctx, name, "main"); err != nil {
		t.Errorf("tokenizer of %s: %v", name, err)
	}
}
