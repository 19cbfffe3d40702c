package train

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/chat"
	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// localSession is a session on an in-process local server whose futures
// are ready after delay.
func localSession(tb testing.TB, delay time.Duration) *tinkerapi.Session {
	return localSessionWith(tb, delay, nil)
}

// localSessionWith is localSession with the server's handler wrapped (a
// test that records requests passes wrap).
func localSessionWith(tb testing.TB, delay time.Duration, wrap func(http.Handler) http.Handler) *tinkerapi.Session {
	return sessionAt(tb, localServer(tb, &engine.Pool{}, delay, wrap))
}

// localServer starts an in-process local server on pool and returns its
// address.
func localServer(tb testing.TB, pool *engine.Pool, delay time.Duration, wrap func(http.Handler) http.Handler) string {
	s, err := server.Open(server.Options{DataDir: tb.TempDir(), SweepInterval: -1, FutureDelay: delay,
		PollHold: 500 * time.Millisecond, Sampler: server.EngineSampler(pool), Engine: pool})
	if err != nil {
		tb.Fatal(err)
	}
	h := s.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	tb.Cleanup(func() { hs.Close(); s.Close() })
	return hs.URL
}

// sessionAt is a session on the server at url.
func sessionAt(tb testing.TB, url string) *tinkerapi.Session {
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: url, APIKey: "tml-train-test"})
	if err != nil {
		tb.Fatal(err)
	}
	sess, err := c.CreateSession(tb.Context(), tinkerapi.SessionOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sess.Close() })
	return sess
}

// qa is n one-turn conversations.
func qa(n int) []Conversation {
	out := make([]Conversation, n)
	for i := range out {
		out[i] = Conversation{Where: fmt.Sprintf("data[%d]", i), Messages: []chat.Message{
			{Role: "user", Content: fmt.Sprintf("Question %d?", i)}, {Role: "assistant", Content: fmt.Sprintf("Answer %d.", i)}}}
	}
	return out
}

// BenchmarkSFTStep is SFT's throughput on the local server (futures ready
// after 1ms): ten conversations, batch 10, so one step per epoch; the
// figure is per step. BenchmarkTrainStepShell/HTTP in builtins/ are the
// same step's shell and raw-HTTP references (make bench-train runs all).
func BenchmarkSFTStep(b *testing.B) {
	sess := localSession(b, time.Millisecond)
	seed := int64(1)
	o := SFTOptions{BaseModel: "tinker-local/tiny-llama", Data: qa(10), Lora: tinkerapi.DefaultLoraConfig(), TrainOn: chat.TrainAllAssistant,
		BatchSize: 10, Epochs: b.N, LearningRate: 1e-4, Schedule: "linear"}
	o.Lora.Rank, o.Lora.Seed = 8, &seed
	b.ResetTimer()
	if _, err := SFT(b.Context(), sess, o); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
