package batch

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"github.com/tinkershell/tinker/lib/tokenizer"
)

const (
	benchPrompts = 8
	benchSamples = 2
	benchTokens  = 16
)

func benchJob(dir string) Job {
	p := DefaultParams()
	p.MaxTokens, p.Seed = benchTokens, ptr(int64(1))
	j := Job{Models: []string{tinyLlama}, NumSamples: benchSamples, Params: p, Output: filepath.Join(dir, "out.jsonl"), Concurrency: 8}
	for i := range benchPrompts {
		j.Prompts = append(j.Prompts, Prompt{ID: fmt.Sprint(i), Text: ptr(fmt.Sprintf("Prompt number %d says", i))})
	}
	return j
}

// BenchmarkBatch samples 16 rows (8 prompts × 2 samples of 16 tokens on
// the tiny Llama) from the local server: with Run at concurrency 8, with
// the same per-row requests issued one at a time, and grouped as one
// request per prompt with num_samples=2 (8 in flight). delay is the local
// server's future delay, standing in for the service's queueing latency.
func BenchmarkBatch(b *testing.B) {
	for _, delay := range []time.Duration{time.Millisecond, 100 * time.Millisecond} {
		c := localServer(b, server.Options{FutureDelay: delay})
		ctx := context.Background()
		sess, err := c.CreateSession(ctx, tinkerapi.SessionOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		sampler, err := sess.CreateSamplingSession(ctx, tinyLlama, "")
		if err != nil {
			b.Fatal(err)
		}
		tok, err := tokenizer.Tiny()
		if err != nil {
			b.Fatal(err)
		}
		job := benchJob(b.TempDir())
		request := func(p Prompt, n int, seed int64) tinkerapi.SampleRequest {
			r := tinkerapi.NewSampleRequest(tok.Encode(*p.Text, true))
			r.MaxTokens, r.NumSamples, r.Seed = benchTokens, n, &seed
			return r
		}
		rows := func(b *testing.B) {
			b.ReportMetric(float64(b.N*benchPrompts*benchSamples)/b.Elapsed().Seconds(), "rows/s")
		}

		b.Run(fmt.Sprintf("delay=%s/batch-c8", delay), func(b *testing.B) {
			for b.Loop() {
				j := benchJob(b.TempDir())
				if res, err := Run(ctx, c, j, Options{}); err != nil || res.Written != benchPrompts*benchSamples {
					b.Fatal(res, err)
				}
			}
			rows(b)
		})
		b.Run(fmt.Sprintf("delay=%s/one-at-a-time", delay), func(b *testing.B) {
			for b.Loop() {
				for _, p := range job.Prompts {
					for i := range benchSamples {
						if _, err := sess.Sample(ctx, sampler, request(p, 1, RowSeed(1, tinyLlama, p.ID, i))); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			rows(b)
		})
		b.Run(fmt.Sprintf("delay=%s/grouped-c8", delay), func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				errs := make(chan error, benchPrompts)
				for _, p := range job.Prompts {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := sess.Sample(ctx, sampler, request(p, benchSamples, RowSeed(1, tinyLlama, p.ID, 0)))
						errs <- err
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			rows(b)
		})
	}
}
