package batch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

func readRows(t *testing.T, path string) []Row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []Row
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad row %q: %v", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return rows
}

// unreachable is a client for a server that is not there: runs that need
// no sampling must not contact it.
func unreachable(t *testing.T) *tinkerapi.Client {
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: "http://127.0.0.1:1", APIKey: "tml-unused", MaxRetryTime: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunFull samples text, token and chat prompts from two models,
// checks each row against a direct sampling call with the row's seed, the
// summary against the file, and that a second run does nothing.
func TestRunFull(t *testing.T) {
	c := localServer(t, server.Options{})
	ctx := context.Background()
	job := testJob(t.TempDir())
	var progress []Progress
	res, err := Run(ctx, c, job, Options{OnProgress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 16 || res.Written != 16 || res.Resumed != 0 || res.Remaining != 0 || res.Seed != 7 {
		t.Fatalf("result %+v", res)
	}
	if len(progress) != 17 || progress[0].Done != 0 || progress[16].Done != 16 || progress[16].Total != 16 || progress[16].Rate <= 0 {
		t.Errorf("progress %+v", progress)
	}
	rows := readRows(t, job.Output)
	if len(rows) != 16 {
		t.Fatalf("%d rows", len(rows))
	}

	// Each row is what one sampling call with its derived seed gives.
	sess, err := c.CreateSession(ctx, tinkerapi.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	tok, err := tokenizer.Tiny()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := chat.New("role_colon", tok)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := rc.Render(mixedPrompts()[2].Messages)
	if err != nil {
		t.Fatal(err)
	}
	samplers := map[string]string{}
	seen := map[key]bool{}
	type agg struct {
		rows, tokens, lpTokens int
		sumLP                  float64
		stops                  map[string]int
	}
	aggs := map[string]*agg{}
	for _, r := range rows {
		if seen[r.key()] {
			t.Fatalf("row %+v twice", r.key())
		}
		seen[r.key()] = true
		if r.Seed != RowSeed(7, r.Model, r.PromptID, r.Sample) {
			t.Errorf("row %v has seed %d", r.key(), r.Seed)
		}
		if r.Text != tok.Decode(r.Tokens, true) {
			t.Errorf("row %v text %q for tokens %v", r.key(), r.Text, r.Tokens)
		}
		if samplers[r.Model] == "" {
			if samplers[r.Model], err = sess.CreateSamplingSession(ctx, r.Model, ""); err != nil {
				t.Fatal(err)
			}
		}
		req := tinkerapi.NewSampleRequest(nil)
		req.MaxTokens, req.Seed = 8, &r.Seed
		switch r.PromptID {
		case "text":
			req.PromptTokens = tok.Encode("Once upon a time", true)
		case "4":
			req.PromptTokens = tok.Encode("The quick brown fox", true)
		case "tokens":
			req.PromptTokens = []int{256, 72, 101, 108, 108, 111}
		case "chat":
			req.PromptTokens, req.StopTokens = rendered.Tokens, rendered.StopTokens
		}
		want, err := sess.Sample(ctx, samplers[r.Model], req)
		if err != nil {
			t.Fatal(err)
		}
		w := want.Sequences[0]
		wj, _ := json.Marshal(Row{r.Model, r.PromptID, r.Sample, r.Seed, tok.Decode(w.Tokens, true), w.Tokens, w.Logprobs, w.StopReason})
		gj, _ := json.Marshal(r)
		if string(wj) != string(gj) {
			t.Errorf("row differs from a direct call:\n got %s\nwant %s", gj, wj)
		}
		a := aggs[r.Model]
		if a == nil {
			a = &agg{stops: map[string]int{}}
			aggs[r.Model] = a
		}
		a.rows++
		a.tokens += len(r.Tokens)
		a.lpTokens += len(r.Logprobs)
		for _, lp := range r.Logprobs {
			a.sumLP += float64(lp)
		}
		a.stops[r.StopReason]++
	}
	if len(res.Models) != 2 || res.Models[0].Model != tinyLlama || res.Models[1].Model != tinyQwen {
		t.Fatalf("summary %+v", res.Models)
	}
	for _, s := range res.Models {
		a := aggs[s.Model]
		if s.Rows != 8 || s.Missing != 0 || s.MeanTokens != float64(a.tokens)/8 || s.LogprobTokens != a.lpTokens ||
			s.LogprobTokens == 0 || s.MeanLogprob != a.sumLP/float64(a.lpTokens) {
			t.Errorf("summary %+v, want from the file %+v", s, a)
		}
		n := 0
		for _, rc := range s.StopReasons {
			if a.stops[rc.Reason] != rc.Count {
				t.Errorf("%s: %d rows stopped for %s, the file has %d", s.Model, rc.Count, rc.Reason, a.stops[rc.Reason])
			}
			n += rc.Count
		}
		if n != 8 {
			t.Errorf("%s: stop reasons cover %d rows", s.Model, n)
		}
	}

	// Everything is done: the same job neither samples nor connects.
	again, err := Run(ctx, unreachable(t), job, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Written != 0 || again.Resumed != 16 || again.Remaining != 0 || again.Models[0].Rows != 8 {
		t.Errorf("second run %+v", again)
	}
}

// TestResumeAfterCancel stops a run after a few rows, resumes it, and
// compares the file with an uninterrupted run's. The job has no seed: the
// first run picks one and the resumed run must reuse it.
func TestResumeAfterCancel(t *testing.T) {
	c := localServer(t, server.Options{})
	job := testJob(t.TempDir())
	job.Params.Seed = nil

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const stopAfter = 5
	res, err := Run(ctx, c, job, Options{OnProgress: func(p Progress) {
		if p.Done >= stopAfter {
			cancel()
		}
	}})
	var stopped *StoppedError
	if !errors.As(err, &stopped) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	if res.Written < stopAfter || res.Remaining != 16-res.Written || stopped.Remaining != res.Remaining ||
		!strings.Contains(err.Error(), "run the same job again") {
		t.Fatalf("cancelled run: %+v, %v", res, err)
	}
	if n := len(readRows(t, job.Output)); n != res.Written {
		t.Fatalf("file has %d rows, the run wrote %d", n, res.Written)
	}
	seed := res.Seed

	resumed, err := Run(context.Background(), c, job, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Seed != seed || resumed.Resumed != res.Written || resumed.Written != 16-res.Written || resumed.Remaining != 0 {
		t.Fatalf("resumed run %+v after %+v", resumed, res)
	}

	ref := testJob(t.TempDir())
	ref.Params.Seed = &seed
	ref.Concurrency = 1
	if _, err := Run(context.Background(), c, ref, Options{}); err != nil {
		t.Fatal(err)
	}
	sameRows(t, ref.Output, job.Output)
}

// TestResumeTornLine resumes a file whose last line a crash cut short.
func TestResumeTornLine(t *testing.T) {
	c := localServer(t, server.Options{})
	ref := testJob(t.TempDir())
	if _, err := Run(context.Background(), c, ref, Options{}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(ref.Output)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	const kept = 6
	torn := strings.Join(lines[:kept], "") + lines[kept][:len(lines[kept])/2]

	job := testJob(t.TempDir())
	if err := os.WriteFile(job.Output, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	meta, err := os.ReadFile(MetaPath(ref.Output))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(MetaPath(job.Output), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), c, job, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TornBytes != len(lines[kept])/2 || res.Resumed != kept || res.Written != 16-kept {
		t.Fatalf("result %+v", res)
	}
	sameRows(t, ref.Output, job.Output)
}

// TestRefusesOtherParameters: a file sampled with other parameters, or
// without its meta file, is not resumed; refusals need no server.
func TestRefusesOtherParameters(t *testing.T) {
	c := localServer(t, server.Options{})
	dir := t.TempDir()
	job := testJob(dir)
	job.Prompts = job.Prompts[:1]
	job.Models = job.Models[:1]
	if _, err := Run(context.Background(), c, job, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(j *Job)
		want string
	}{
		{"temperature", func(j *Job) { j.Params.Temperature = 0.5 }, "temperature was 1, now 0.5"},
		{"seed", func(j *Job) { j.Params.Seed = ptr(int64(8)) }, "seed was 7, now 8"},
		{"stop", func(j *Job) { j.Params.StopStrings = []string{"\n"} }, `stop_strings was null, now ["\n"]`},
		{"prompts", func(j *Job) { j.Prompts = mixedPrompts()[:2] }, "the prompts differ (1 then, 2 now)"},
		{"prompt text", func(j *Job) { j.Prompts = []Prompt{{ID: "text", Text: ptr("other")}} }, "the prompts differ"},
	} {
		j := job
		tc.edit(&j)
		_, err := Run(context.Background(), unreachable(t), j, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "new output file") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// More models and samples extend the file: only the new rows are sampled.
	more := job
	more.Models, more.NumSamples = []string{tinyLlama, tinyQwen}, 3
	res, err := Run(context.Background(), c, more, Options{})
	if err != nil || res.Resumed != 2 || res.Written != 4 {
		t.Fatalf("extended run %+v: %v", res, err)
	}

	if err := os.Remove(MetaPath(job.Output)); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), unreachable(t), job, Options{})
	if err == nil || !strings.Contains(err.Error(), "no results.jsonl.meta.json") {
		t.Errorf("without meta: %v", err)
	}

	garbage := filepath.Join(dir, "garbage.jsonl")
	os.WriteFile(garbage, []byte("{\"model\":\"m\",\"prompt_id\":\"1\"}\nnot json\n"), 0o644)
	os.WriteFile(MetaPath(garbage), []byte(`{"format":1}`), 0o644)
	j := job
	j.Output = garbage
	if _, err = Run(context.Background(), unreachable(t), j, Options{}); err == nil || !strings.Contains(err.Error(), "line 2 is not a result row") {
		t.Errorf("garbage: %v", err)
	}
}

// gateSampler holds the first sample until the test opens the gate, so
// the server's one pending-sample slot stays taken and every other
// submission is pushed back.
type gateSampler struct {
	server.Sampler
	once sync.Once
	gate chan struct{}
}

func (g *gateSampler) Sample(ctx context.Context, req server.SampleRequest) (*engine.SampleResponse, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Sampler.Sample(ctx, req)
}

// TestBackpressure runs against a server that answers 429 while one
// sample is pending: the run halves its concurrency and still writes the
// same rows as an unhindered run.
func TestBackpressure(t *testing.T) {
	plain := localServer(t, server.Options{})
	ref := testJob(t.TempDir())
	if _, err := Run(context.Background(), plain, ref, Options{}); err != nil {
		t.Fatal(err)
	}

	g := &gateSampler{Sampler: localEngine(), gate: make(chan struct{})}
	c := localServer(t, server.Options{Sampler: g, MaxPendingSamples: 1})
	job := testJob(t.TempDir())
	job.Concurrency = 4
	var open sync.Once
	res, err := Run(context.Background(), c, job, Options{Session: tinkerapi.SessionOptions{Timings: fastTimings,
		OnState: func(s tinkerapi.State) {
			if s.Status == tinkerapi.StatusPaused {
				open.Do(func() { close(g.gate) })
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.PushBacks < 1 || res.MinConcurrency > 2 || res.Written != 16 {
		t.Errorf("result %+v", res)
	}
	sameRows(t, ref.Output, job.Output)
}

// TestCheckpointModel samples a tinker:// sampler checkpoint.
func TestCheckpointModel(t *testing.T) {
	c := localServer(t, server.Options{})
	ctx := context.Background()
	sess, err := c.CreateSession(ctx, tinkerapi.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	seed := int64(1)
	run, err := sess.CreateModel(ctx, tinyLlama, tinkerapi.LoraConfig{Rank: 4, Seed: &seed, TrainMLP: true, TrainAttn: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	path, err := sess.SaveWeightsForSampler(ctx, run, "final", nil)
	if err != nil {
		t.Fatal(err)
	}
	job := testJob(t.TempDir())
	job.Models = []string{path}
	res, err := Run(ctx, c, job, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, job.Output)
	if res.Written != 8 || len(rows) != 8 || rows[0].Model != path || res.Models[0].Model != path {
		t.Errorf("result %+v, rows %+v", res, rows)
	}

	job.Models = []string{strings.Replace(path, "sampler_weights", "weights", 1)}
	job.Output = filepath.Join(t.TempDir(), "w.jsonl")
	if _, err := Run(ctx, c, job, Options{}); err == nil || !strings.Contains(err.Error(), "training checkpoint") {
		t.Errorf("training checkpoint: %v", err)
	}
}
