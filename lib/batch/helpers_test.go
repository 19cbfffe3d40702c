package batch

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

const (
	tinyLlama = "tinker-local/tiny-llama"
	tinyQwen  = "tinker-local/tiny-qwen3"
)

// localServer starts the local server with the engine's sampler (or
// opts.Sampler) and returns a client for it.
func localServer(tb testing.TB, opts server.Options) *tinkerapi.Client {
	tb.Helper()
	if opts.Sampler == nil {
		opts.Sampler = localEngine()
	}
	if opts.FutureDelay == 0 {
		opts.FutureDelay = time.Millisecond
	}
	opts.DataDir, opts.SweepInterval = tb.TempDir(), -1
	srv, err := server.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: base, APIKey: "tml-batch-test", MaxRetryTime: 10 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// fastTimings shortens the client's waits so backpressure tests run quickly.
var fastTimings = tinkerapi.PollTimings{Backpressure: 5 * time.Millisecond, FloorMin: time.Millisecond,
	FloorMax: 5 * time.Millisecond, BackoffUnit: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond}

func ptr[T any](v T) *T { return &v }

// mixedPrompts has one prompt of each kind.
func mixedPrompts() []Prompt {
	return []Prompt{
		{ID: "text", Text: ptr("Once upon a time")},
		{ID: "tokens", Tokens: []int{256, 72, 101, 108, 108, 111}},
		{ID: "chat", Messages: []chat.Message{{Role: "user", Content: "Say hi"}}},
		{ID: "4", Text: ptr("The quick brown fox")},
	}
}

func testJob(dir string) Job {
	p := DefaultParams()
	p.MaxTokens = 8
	p.Seed = ptr(int64(7))
	return Job{Models: []string{tinyLlama, tinyQwen}, Prompts: mixedPrompts(), NumSamples: 2, Params: p,
		Output: filepath.Join(dir, "results.jsonl"), Concurrency: 3}
}

// sortedLines returns a file's lines sorted, for comparing runs whose
// rows complete in different orders.
func sortedLines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end in a complete line", path)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last newline
	slices.SortFunc(lines, bytes.Compare)
	return lines
}

func sameRows(t *testing.T, want, got string) {
	t.Helper()
	a, b := sortedLines(t, want), sortedLines(t, got)
	if len(a) != len(b) {
		t.Fatalf("%s has %d rows, %s has %d", want, len(a), got, len(b))
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("row %d differs:\n%s\n%s", i, a[i], b[i])
		}
	}
}

func localEngine() server.Sampler { return server.EngineSampler(&engine.Pool{}) }
