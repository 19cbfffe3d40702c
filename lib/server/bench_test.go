package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/store"
)

// BenchmarkImport10k imports 100 runs x 100 checkpoints (10,000) of real
// base models, sizes computed from their LoRA shapes, in one transaction.
func BenchmarkImport10k(b *testing.B) {
	m := fmt.Sprintf(`{"owner_key": %q, "generate": {"runs": 100, "checkpoints_per_run": 100}}`, key)
	for b.Loop() {
		dir := b.TempDir()
		st, err := Import(b.Context(), dir, strings.NewReader(m), t0)
		if err != nil {
			b.Fatal(err)
		}
		if st.Checkpoints != 10000 {
			b.Fatalf("imported %d", st.Checkpoints)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/import")
}

// BenchmarkListEndpointLoad drives GET /api/v1/checkpoints?limit=100 over
// loopback from concurrent keep-alive clients against 10,000 checkpoints and
// reports throughput and latency percentiles. Bounded by request count.
func BenchmarkListEndpointLoad(b *testing.B) {
	dir := b.TempDir()
	m := fmt.Sprintf(`{"owner_key": %q, "generate": {"runs": 100, "checkpoints_per_run": 100}}`, key)
	if _, err := Import(b.Context(), dir, strings.NewReader(m), t0); err != nil {
		b.Fatal(err)
	}
	s, err := Open(Options{DataDir: dir, SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	base, err := s.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	const conc = 16
	total := 20000
	if v := os.Getenv("TINKER_BENCH_REQUESTS"); v != "" {
		fmt.Sscan(v, &total)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	b.ResetTimer()
	var rps, p50, p99 float64
	for b.Loop() {
		var next atomic.Int64
		lat := make([][]time.Duration, conc)
		var wg sync.WaitGroup
		var failed atomic.Int64
		start := time.Now()
		for c := 0; c < conc; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				for {
					i := next.Add(1)
					if i > int64(total) {
						return
					}
					off := (i * 100) % 10000
					req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/checkpoints?limit=100&offset=%d", base, off), nil)
					req.Header.Set("X-API-Key", key)
					t := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						failed.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						failed.Add(1)
					}
					lat[c] = append(lat[c], time.Since(t))
				}
			}(c)
		}
		wg.Wait()
		el := time.Since(start)
		if failed.Load() > 0 {
			b.Fatalf("%d failed requests", failed.Load())
		}
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		rps = float64(len(all)) / el.Seconds()
		p50 = float64(all[len(all)/2].Microseconds()) / 1000
		p99 = float64(all[len(all)*99/100].Microseconds()) / 1000
	}
	b.ReportMetric(rps, "req/s")
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkSaveCheckpointQwen3_8B saves a Qwen3-8B-shaped rank-32 sampler
// checkpoint (bf16 PEFT adapter, ~185 MB) through the server's save path:
// generate, write, fsync, rename, record.
func BenchmarkSaveCheckpointQwen3_8B(b *testing.B) {
	s, err := Open(Options{DataDir: b.TempDir(), SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	run := store.Run{ID: "bench:train:0", SessionID: "bench", Owner: "u", BaseModel: "Qwen/Qwen3-8B", IsLora: true, LoraRank: 32,
		TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: 1, CreatedAt: now, LastRequestTime: now}
	if err := s.st.CreateRun(run); err != nil {
		b.Fatal(err)
	}
	rv, _ := s.st.Run(run.ID, now)
	var size int64
	i := 0
	for b.Loop() {
		c, err := s.saveCheckpoint(rv, "sampler_weights", fmt.Sprint(i), nil, false)
		if err != nil {
			b.Fatal(err)
		}
		size = c.SizeBytes
		i++
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec, "s/save")
	b.ReportMetric(float64(size)/1e6/sec, "MB/s")
	b.ReportMetric(float64(size)/1e6, "MB")
}

// BenchmarkArchiveDownload measures serving a materialised archive (Llama-3.1-8B
// rank 32 training checkpoint, ~350 MB) over loopback to a discarding client.
func BenchmarkArchiveDownload(b *testing.B) {
	dir := b.TempDir()
	m := fmt.Sprintf(`{"owner_key": %q, "runs": [{"base_model": "meta-llama/Llama-3.1-8B", "lora_rank": 32, "checkpoints": [{"kind": "weights", "name": "big"}]}]}`, key)
	if _, err := Import(b.Context(), dir, strings.NewReader(m), t0); err != nil {
		b.Fatal(err)
	}
	s, err := Open(Options{DataDir: dir, SweepInterval: -1, ArchiveSyncLimit: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	base, _ := s.Start("127.0.0.1:0")
	runs, _ := s.st.ListRuns(OwnerURN(key), false, time.Now(), 1, 0)
	req, _ := http.NewRequest("GET", base+"/api/v1/training_runs/"+runs[0].ID+"/checkpoints/weights/big/archive", nil)
	req.Header.Set("X-API-Key", key)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil || resp.StatusCode != 302 {
		b.Fatalf("archive: %v %v", err, resp)
	}
	loc := resp.Header.Get("Location")
	var n int64
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Get(loc)
		if err != nil {
			b.Fatal(err)
		}
		n, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.SetBytes(n)
}

// BenchmarkFuturesLoad: 16 loopback clients each submit asample and poll
// retrieve_future until the result arrives, while a second user floods the
// server with samples it never collects. It reports the collecting clients'
// round trips per second and p99, and the flood's accepted and refused
// submissions. Bounded by TINKER_BENCH_REQUESTS round trips (default 20,000).
func BenchmarkFuturesLoad(b *testing.B) {
	keys := []string{key, "tml-flooder"}
	s, err := Open(Options{DataDir: b.TempDir(), SweepInterval: -1, Sampler: fakeSampler{}, FutureDelay: time.Nanosecond,
		MaxPendingSamples: 1 << 30, APIKeys: keys})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	base, err := s.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	const conc = 16
	total := 20000
	if v := os.Getenv("TINKER_BENCH_REQUESTS"); v != "" {
		fmt.Sscan(v, &total)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc + 1, MaxConnsPerHost: conc + 1}, Timeout: 30 * time.Second}
	post := func(k, path, body string) (int, []byte, error) {
		req, _ := http.NewRequest("POST", base+"/api/v1/"+path, strings.NewReader(body))
		req.Header.Set("X-API-Key", k)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		return resp.StatusCode, out, err
	}
	const sample = `{"base_model": "tinker-local/tiny-llama", "prompt": {"chunks": [{"tokens": [5]}]}}`
	var rps, p99 float64
	var flooded, refused atomic.Int64
	for b.Loop() {
		var next atomic.Int64
		lat := make([][]time.Duration, conc)
		var wg sync.WaitGroup
		var failed atomic.Int64
		stop := make(chan struct{})
		floodDone := make(chan struct{})
		go func() {
			defer close(floodDone)
			for i := 0; i < 4*total; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, _, err := post(keys[1], "asample", sample)
				switch {
				case err != nil:
					failed.Add(1)
				case code == 200:
					flooded.Add(1)
				case code == 429:
					refused.Add(1)
				}
			}
		}()
		start := time.Now()
		for c := 0; c < conc; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				for next.Add(1) <= int64(total) {
					t := time.Now()
					code, out, err := post(key, "asample", sample)
					if err != nil || code != 200 {
						failed.Add(1)
						continue
					}
					var f struct {
						RequestID string `json:"request_id"`
					}
					json.Unmarshal(out, &f)
					poll := `{"request_id": "` + f.RequestID + `"}`
					for {
						code, out, err = post(key, "retrieve_future", poll)
						if err != nil || code != 200 {
							failed.Add(1)
							break
						}
						if !strings.Contains(string(out), "try_again") {
							break
						}
					}
					lat[c] = append(lat[c], time.Since(t))
				}
			}(c)
		}
		wg.Wait()
		el := time.Since(start)
		close(stop)
		<-floodDone
		if failed.Load() > 0 {
			b.Fatalf("%d failed requests", failed.Load())
		}
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		rps = float64(len(all)) / el.Seconds()
		p99 = float64(all[len(all)*99/100].Microseconds()) / 1000
	}
	b.ReportMetric(rps, "roundtrips/s")
	b.ReportMetric(p99, "p99-ms")
	b.ReportMetric(float64(flooded.Load())/float64(b.N), "flood-accepted")
	b.ReportMetric(float64(refused.Load())/float64(b.N), "flood-refused")
	b.ReportMetric(0, "ns/op")
}
