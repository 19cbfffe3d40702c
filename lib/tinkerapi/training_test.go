package tinkerapi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// TestSessionFlowAgainstLocalServer drives the session API against the
// real local server and sampling engine: create a LoRA model on the
// built-in tiny Llama, save sampler and training weights, and sample the
// saved checkpoint and the base model, with protobuf results.
func TestSessionFlowAgainstLocalServer(t *testing.T) {
	c := localClient(t, server.Options{Sampler: server.EngineSampler(&engine.Pool{})}, "tml-session-e2e", 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	var mu sync.Mutex
	done := map[string]int{}
	warnings := make(chan error, 10)
	sess, err := c.CreateSession(ctx, tinkerapi.SessionOptions{
		Tags:              []string{"e2e"},
		HeartbeatInterval: 5 * time.Millisecond,
		OnWarning:         func(err error) { warnings <- err },
		OnState: func(s tinkerapi.State) {
			if s.Status == tinkerapi.StatusDone {
				mu.Lock()
				done[s.Kind]++
				mu.Unlock()
			}
		},
	})
	must(err, "CreateSession")
	defer sess.Close()

	const tiny = "tinker-local/tiny-llama"
	seed := int64(3)
	model, err := sess.CreateModel(ctx, tiny, tinkerapi.LoraConfig{Rank: 4, Seed: &seed, TrainMLP: true, TrainAttn: true}, map[string]string{"purpose": "e2e"})
	must(err, "CreateModel")
	if model != sess.ID()+":train:0" {
		t.Errorf("model id %q", model)
	}
	info, err := sess.GetInfo(ctx, model)
	must(err, "GetInfo")
	if info.ModelName != tiny || info.IsLora == nil || !*info.IsLora || info.LoraRank == nil || *info.LoraRank != 4 {
		t.Errorf("get_info %+v", info)
	}

	path, err := sess.SaveWeightsForSampler(ctx, model, "final", nil)
	must(err, "SaveWeightsForSampler")
	if path != "tinker://"+model+"/sampler_weights/final" {
		t.Errorf("sampler path %q", path)
	}
	ttl := int64(3600)
	wpath, err := sess.SaveWeights(ctx, model, "0001", &ttl)
	must(err, "SaveWeights")
	if wpath != "tinker://"+model+"/weights/0001" {
		t.Errorf("weights path %q", wpath)
	}
	// Saving under a taken name fails as a user error of the future.
	_, err = sess.SaveWeightsForSampler(ctx, model, "final", nil)
	var rf *tinkerapi.RequestFailedError
	if !errors.As(err, &rf) || rf.Category != "user" || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate save: %v", err)
	}
	cps, err := c.ListRunCheckpoints(ctx, model)
	must(err, "ListRunCheckpoints")
	if len(cps.Checkpoints) != 2 {
		t.Errorf("checkpoints %+v", cps.Checkpoints)
	}
	wi, err := c.WeightsInfo(ctx, path)
	must(err, "WeightsInfo")
	if wi.BaseModel != tiny || wi.LoraRank == nil || *wi.LoraRank != 4 || wi.TrainUnembed == nil || *wi.TrainUnembed {
		t.Errorf("weights info %+v", wi)
	}

	if _, err := sess.CreateSamplingSession(ctx, "", wpath); err == nil || !strings.Contains(err.Error(), "save sampler weights first") {
		t.Errorf("sampling a training checkpoint: %v", err)
	}
	sampler, err := sess.CreateSamplingSession(ctx, "", path)
	must(err, "CreateSamplingSession")
	gs, err := c.GetSampler(ctx, sampler)
	must(err, "GetSampler")
	if gs.BaseModel != tiny || gs.ModelPath == nil || *gs.ModelPath != path {
		t.Errorf("sampler %+v", gs)
	}

	greedy := tinkerapi.NewSampleRequest([]int{256, 'H', 'i'})
	greedy.MaxTokens, greedy.Temperature, greedy.PromptLogprobs = 5, 0, true
	var first *tinkerapi.SampleResponse
	for i := 0; i < 2; i++ {
		r, err := sess.Sample(ctx, sampler, greedy)
		must(err, "Sample")
		if len(r.Sequences) != 1 {
			t.Fatalf("sequences %+v", r.Sequences)
		}
		sq := r.Sequences[0]
		if n := len(sq.Tokens); n == 0 || n > 5 || len(sq.Logprobs) != n || (sq.StopReason == "length") != (n == 5) {
			t.Errorf("sequence %+v", sq)
		}
		for _, lp := range sq.Logprobs {
			if !(lp <= 0) {
				t.Errorf("logprob %v", lp)
			}
		}
		if len(r.PromptLogprobs) != 3 || r.PromptLogprobs[0] != nil || r.PromptLogprobs[1] == nil || *r.PromptLogprobs[2] > 0 {
			t.Errorf("prompt logprobs %v", r.PromptLogprobs)
		}
		if first == nil {
			first = r
		} else if fmt.Sprint(first.Sequences[0].Tokens) != fmt.Sprint(sq.Tokens) {
			t.Errorf("greedy samples differ: %v vs %v", first.Sequences[0].Tokens, sq.Tokens)
		}
	}

	// Seeded sampling from the base model is reproducible.
	baseSampler, err := sess.CreateSamplingSession(ctx, tiny, "")
	must(err, "CreateSamplingSession(base)")
	seeded := tinkerapi.NewSampleRequest([]int{256, 'a'})
	seeded.MaxTokens, seeded.NumSamples, seeded.Seed = 8, 3, &seed
	a, err := sess.Sample(ctx, baseSampler, seeded)
	must(err, "Sample(base)")
	b, err := sess.Sample(ctx, baseSampler, seeded)
	must(err, "Sample(base)")
	if len(a.Sequences) != 3 || fmt.Sprint(a.Sequences) != fmt.Sprint(b.Sequences) {
		t.Errorf("seeded samples differ:\n%v\n%v", a.Sequences, b.Sequences)
	}

	// Heartbeats kept the session alive throughout.
	select {
	case w := <-warnings:
		t.Errorf("heartbeat warning: %v", w)
	default:
	}
	if err := sess.Err(); err != nil {
		t.Error(err)
	}
	mu.Lock()
	if done["CreateModel"] != 1 || done["SaveWeightsForSampler"] != 1 || done["SaveWeights"] != 1 || done["Sample"] != 4 {
		t.Errorf("done states per kind %v", done)
	}
	mu.Unlock()
	must(sess.Close(), "Close")
}

// Saving a LoRA checkpoint and sampling it, as save_checkpoint() and
// sample() do. Close the session when done, also on Ctrl-C (cancel ctx
// first, then Close).
func ExampleSession() {
	ctx := context.Background()
	c, err := tinkerapi.New(tinkerapi.ConfigFromEnv(nil))
	if err != nil {
		return
	}
	opts := tinkerapi.SessionOptionsFromEnv(nil) // TINKER_TAGS, TINKER_PROJECT_ID
	opts.OnState = func(s tinkerapi.State) { fmt.Printf("\r%s", s) }
	sess, err := c.CreateSession(ctx, opts)
	if err != nil {
		return
	}
	defer sess.Close()
	model, err := sess.CreateModel(ctx, "Qwen/Qwen3-8B", tinkerapi.DefaultLoraConfig(), nil)
	if err != nil {
		return
	}
	path, err := sess.SaveWeightsForSampler(ctx, model, "final", nil)
	if err != nil {
		return
	}
	sampler, err := sess.CreateSamplingSession(ctx, "", path)
	if err != nil {
		return
	}
	req := tinkerapi.NewSampleRequest([]int{9707, 1917})
	req.MaxTokens, req.Temperature = 32, 0
	res, err := sess.Sample(ctx, sampler, req)
	if err != nil {
		return
	}
	fmt.Println(res.Sequences[0].Tokens, res.Sequences[0].StopReason)
}
