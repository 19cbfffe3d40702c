package engine

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/tinkershell/tinker/lib/models"
)

// Prompt and generation lengths of BenchmarkPrefillDecode.
// The scalar reference runs a shorter prompt and generation: at its speed
// the full ones would take minutes.
const (
	prefillTokens       = 512
	decodeTokens        = 32
	prefillScalarTokens = 64
	decodeScalarTokens  = 4
)

// BenchmarkPrefillDecode runs a random Qwen3-0.6B-shaped model with
// float32 and with bfloat16 weights: prefill tokens/s of a 512-token prompt
// and decode tokens/s of one sequence, with the vector kernels next to the
// scalar ones in the same run (on a 64-token prompt and 4 tokens), and
// decode against the memory-bandwidth limit (measureDecode: the median of
// decodeReps decodes, each beside its own read-bandwidth probe).
func BenchmarkPrefillDecode(b *testing.B) {
	c := qwen3Small()
	eachDecodeModel(b, func(b *testing.B, m *Model, dtype string) {
		prompt := benchPrompt(c, prefillTokens)
		var pre, preS, decS time.Duration
		var preCPU, preCPUS float64
		var dec []decodeFigures
		for b.Loop() {
			d, cpu := sampleTimed(b, m, prompt, 1)
			pre, preCPU = pre+d, preCPU+cpu
			dec = append(dec, measureDecode(b, m, dtype))
			if useSIMD && dtype != "bf16-compute" { // the bf16 path has no scalar twin
				useSIMD = false
				d, cpu := sampleTimed(b, m, prompt[:prefillScalarTokens], 1)
				preS, preCPUS = preS+d, preCPUS+cpu
				d, _ = decodeTime(b, m, prompt[:1], decodeScalarTokens)
				decS += d
				useSIMD = true
			}
		}
		n := float64(b.N)
		reportDecode(b, dec)
		b.ReportMetric(prefillTokens*n/pre.Seconds(), "tok/s-prefill")
		b.ReportMetric(prefillTokens*n/preCPU, "tok/cpu-s-prefill")
		if torch, ok := torchPrefill(b, dtype); ok {
			b.ReportMetric(torch.wall, "tok/s-prefill-pytorch")
			b.ReportMetric(prefillTokens*n/pre.Seconds()/torch.wall, "x-pytorch-prefill")
			b.ReportMetric(torch.cpu, "tok/cpu-s-prefill-pytorch")
			b.ReportMetric(prefillTokens*n/preCPU/torch.cpu, "x-pytorch-prefill-cpu")
		}
		if preS > 0 {
			b.ReportMetric(prefillScalarTokens*n/preS.Seconds(), "tok/s-prefill-scalar")
			b.ReportMetric(prefillScalarTokens*n/preCPUS, "tok/cpu-s-prefill-scalar")
			b.ReportMetric(decodeScalarTokens*n/decS.Seconds(), "tok/s-decode-scalar")
		}
	})
}

// BenchmarkDecode is BenchmarkPrefillDecode's decode alone (no prefill,
// no scalar kernels): the figures to compare two builds by, interleaved.
func BenchmarkDecode(b *testing.B) {
	eachDecodeModel(b, func(b *testing.B, m *Model, dtype string) {
		var dec []decodeFigures
		for b.Loop() {
			dec = append(dec, measureDecode(b, m, dtype))
		}
		reportDecode(b, dec)
	})
}

// eachDecodeModel runs bench as a sub-benchmark on the random
// Qwen3-0.6B-shaped model with float32 weights, bfloat16 weights, and
// bfloat16 on the bf16 compute path where the CPU has it.
func eachDecodeModel(b *testing.B, bench func(b *testing.B, m *Model, dtype string)) {
	c := qwen3Small()
	ts := randomTensors(c, 1)
	for _, dtype := range []string{"f32", "bf16", "bf16-compute"} {
		if dtype == "bf16" {
			matricesToBF16(ts)
		}
		if dtype == "bf16-compute" && !bf16Compute() {
			continue // the CPU has no bf16 instructions
		}
		m, err := New("qwen3-0.6b-shape", c, ts)
		if err != nil {
			b.Fatal(err)
		}
		if dtype == "bf16-compute" {
			m.w.withBF16Compute()
		}
		b.Run(dtype, func(b *testing.B) { bench(b, m, dtype) })
	}
}

// benchPrompt is an n-token prompt of spread token ids.
func benchPrompt(c Config, n int) []int {
	prompt := make([]int, n)
	for i := range prompt {
		prompt[i] = (i * 7919) % c.VocabSize
	}
	return prompt
}

// sampleTimed samples gen tokens after prompt (seeded, temperature 1) and
// returns the wall time and the process CPU-seconds it took.
func sampleTimed(b *testing.B, m *Model, prompt []int, gen int) (time.Duration, float64) {
	c0, t0 := processCPU(), time.Now()
	seed := int64(1)
	if _, err := m.Sample(context.Background(), SampleRequest{Prompt: prompt, NumSamples: 1, MaxTokens: gen, Temperature: 1, Seed: &seed}); err != nil {
		b.Fatal(err)
	}
	return time.Since(t0), processCPU() - c0
}

// decodeTime is the time of decoding gen tokens after prompt, and its
// process CPU-seconds: a run of gen+1 tokens less a run of one (the
// prompt's prefill and first token).
func decodeTime(b *testing.B, m *Model, prompt []int, gen int) (time.Duration, float64) {
	long, longCPU := sampleTimed(b, m, prompt, gen+1)
	short, shortCPU := sampleTimed(b, m, prompt, 1)
	return long - short, longCPU - shortCPU
}

// decodeReps is how many decodes measureDecode times per iteration.
const decodeReps = 5

// decodeFigures are the medians of one measureDecode: tokens/s, tokens
// per process CPU-second (the figure to compare builds by on a loaded
// machine), the weight bytes streamed per second, the read-bandwidth
// probe, the tokens/s it allows (the limit) and the decode's share of the
// probes beside it; and pairedShare's share of the limit token by token.
type decodeFigures struct{ tokS, tokCPU, gbs, probe, limit, share, paired float64 }

// measureDecode decodes decodeTokens after a one-token prompt decodeReps
// times, with the read-bandwidth probe over the model's own matrices
// (decodeMatrixWords: every read variant, the fastest reading kept) before
// the first and after every decode, and returns the medians; each share
// is against the mean of the probes on either side of its decode. This
// VM's bandwidth drifts by ±15% over minutes and the probe moved
// 24.0-28.8 GB/s between quiet runs, so one probe per run, or a mean of
// shares, left single figures anywhere between 70% and 90%. It logs how
// often each variant read fastest. Then one more decode pairs each token
// with the readings beside it (pairedShare), by the two variants that
// read fastest in those probes.
func measureDecode(b *testing.B, m *Model, dtype string) decodeFigures {
	bytes := matrixParams(m.cfg) * 2
	if dtype == "f32" {
		bytes *= 2
	}
	ps, bufs := readProbes(), decodeMatrixWords(m)
	wins := map[string]int{}
	bests := make([]float64, len(ps))
	probeModel := func() float64 {
		best, name := 0.0, ""
		for i, bw := range variantReads(ps, bufs) {
			bests[i] = max(bests[i], bw)
			if bw > best {
				best, name = bw, ps[i].name
			}
		}
		wins[name]++
		return best
	}
	var tok, tokCPU, gbs, probe, limit, share []float64
	after := probeModel()
	for range decodeReps {
		before := after
		d, cpu := decodeTime(b, m, []int{0}, decodeTokens)
		rate := decodeTokens / d.Seconds()
		tokCPU = append(tokCPU, decodeTokens/cpu)
		after = probeModel()
		bw := (before + after) / 2
		tok, gbs, probe = append(tok, rate), append(gbs, rate*bytes/1e9), append(probe, bw/1e9)
		limit, share = append(limit, bw/bytes), append(share, 100*rate*bytes/bw)
	}
	top := fastestVariants(ps, bests, 2)
	paired, pairedBW := pairedShare(b, m, bytes, top, bufs)
	b.Logf("%s: fastest read variant per probe %v; paired with %s, %s: %.1f%% of %.1f GB/s (median token), %.1f%% of the probes' median",
		dtype, wins, top[0].name, top[len(top)-1].name, paired, pairedBW/1e9, 100*pairedBW/1e9/median(probe))
	return decodeFigures{median(tok), median(tokCPU), median(gbs), median(probe), median(limit), median(share), paired}
}

// fastestVariants are the n variants of ps with the fastest readings
// bws (indexed like ps), fastest first.
func fastestVariants(ps []readProbe, bws []float64, n int) []readProbe {
	idx := make([]int, len(ps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(bws[b], bws[a]) })
	var top []readProbe
	for _, i := range idx[:min(n, len(idx))] {
		top = append(top, ps[i])
	}
	return top
}

// pairedShare decodes decodeTokens after a one-token prompt with one
// reading of bufs (poolRead, by the variants ps in turn) after every
// token: Sample's StopFunc runs on the goroutine that steps the model,
// between one token and the next, so the readings and the tokens take
// turns and never overlap. Token i (its forward, sampling and the
// batcher's hand-offs, from the end of one reading to the start of the
// next) is compared with the faster of the two readings on either side
// of it, about 30 ms away each: the rate the machine could read the
// token's bytes at that moment. It returns the median over the tokens of
// those shares, in percent, and the median of the limits in bytes/s.
func pairedShare(b *testing.B, m *Model, bytes float64, ps []readProbe, bufs [][]uint64) (float64, float64) {
	var reads []float64
	var toks []time.Duration
	var last time.Time
	stop := func(gen []int) bool {
		if len(gen) > 1 { // the first token was the prompt's prefill
			toks = append(toks, time.Since(last))
		}
		reads = append(reads, poolRead(ps[len(reads)%len(ps)].read, bufs))
		last = time.Now()
		return false
	}
	seed := int64(1)
	if _, err := m.Sample(context.Background(), SampleRequest{Prompt: []int{0}, NumSamples: 1, MaxTokens: decodeTokens + 1,
		Temperature: 1, Seed: &seed, StopFunc: stop}); err != nil {
		b.Fatal(err)
	}
	return pairShares(bytes, toks, reads)
}

// pairShares is pairedShare's figure from the tokens' times toks and the
// readings reads (bytes/s) taken before the first token and after every
// token: the median of each token's share of the faster reading beside
// it, in percent, and the median of those readings.
func pairShares(bytes float64, toks []time.Duration, reads []float64) (float64, float64) {
	shares, limits := make([]float64, len(toks)), make([]float64, len(toks))
	for i, d := range toks { // between reads[i] and reads[i+1]
		limits[i] = max(reads[i], reads[i+1])
		shares[i] = 100 * bytes / d.Seconds() / limits[i]
	}
	return median(shares), median(limits)
}

// poolRead is one parallel read of bufs, in bytes/s, by sum over pieces
// of readPiece words that the cores claim in turn on the engine's worker
// pool (forkJoin), as a decode's products split their matrices
// (decodePieces): a core the host or another process slows reads fewer
// of them, where bandwidthOver's fixed halves wait for the slower core,
// so under load the reading falls with the decode rather than below it.
// Between pairedShare's tokens the pool's worker stays busy, as between
// a decode's products, instead of sleeping through the reading and
// starting the next token with a wake-up and a halved spin budget
// (workerPool.learn).
func poolRead(sum func([]uint64) uint64, bufs [][]uint64) float64 {
	type piece struct{ buf, lo, hi int }
	var ps []piece
	words := 0
	for i, buf := range bufs {
		n := len(buf) &^ 255
		for lo := 0; lo < n; lo += readPiece {
			ps = append(ps, piece{i, lo, min(lo+readPiece, n)})
		}
		words += n
	}
	sums := make([]uint64, len(ps))
	t0 := time.Now()
	forkJoin(len(ps), func(i int) {
		p := ps[i]
		sums[i] = sum(bufs[p.buf][p.lo:p.hi])
	})
	return float64(8*words) / time.Since(t0).Seconds()
}

// readPiece is poolRead's piece: 2 MiB, one huge page.
const readPiece = 1 << 18

// reportDecode reports the medians over the iterations' figures (the
// medians of their repetitions).
func reportDecode(b *testing.B, dec []decodeFigures) {
	pick := func(f func(decodeFigures) float64) float64 {
		xs := make([]float64, len(dec))
		for i, d := range dec {
			xs[i] = f(d)
		}
		return median(xs)
	}
	b.ReportMetric(pick(func(d decodeFigures) float64 { return d.tokS }), "tok/s-decode")
	b.ReportMetric(pick(func(d decodeFigures) float64 { return d.tokCPU }), "tok/cpu-s-decode")
	b.ReportMetric(pick(func(d decodeFigures) float64 { return d.limit }), "tok/s-decode-bw-limit")
	b.ReportMetric(pick(func(d decodeFigures) float64 { return d.share }), "%decode-of-limit")
	b.ReportMetric(pick(func(d decodeFigures) float64 { return d.paired }), "%decode-of-limit-paired")
	b.ReportMetric(pick(func(d decodeFigures) float64 { return d.probe }), "GB/s-read")
	b.ReportMetric(pick(func(d decodeFigures) float64 { return d.gbs }), "GB/s-decode")
}

// torchPrefill runs the same prefill in PyTorch (testdata/torch_prefill.py)
// when TINKER_BENCH_TORCH names a Python with torch: in float32 for the
// float32 model, in bfloat16 (oneDNN's bf16 path) for the bfloat16 ones
// where the CPU has bf16 instructions.
func torchPrefill(b *testing.B, dtype string) (torchRate, bool) {
	py := os.Getenv("TINKER_BENCH_TORCH")
	if py == "" {
		return torchRate{}, false
	}
	td := "bf16"
	if dtype == "f32" {
		td = "f32"
	} else if !bf16Compute() {
		// Without AVX512-BF16 or AMX, PyTorch 1.13's bf16 matrix products
		// take a slow path: one 512-token prefill ran over 13 minutes on a
		// Zen 3 host. The comparison is for CPUs with bf16 instructions.
		b.Logf("%s: no PyTorch bf16 reference (this CPU has no bf16 instructions)", dtype)
		return torchRate{}, false
	}
	out, err := exec.Command(py, "testdata/torch_prefill.py", td, strconv.Itoa(prefillTokens), "2",
		strconv.Itoa(runtime.GOMAXPROCS(0))).CombinedOutput()
	var r torchRate
	if _, serr := fmt.Sscanf(string(out), "tok/s %g tok/cpu-s %g", &r.wall, &r.cpu); err != nil || serr != nil {
		b.Fatalf("PyTorch prefill: %v %v\n%s", err, serr, out)
	}
	return r, true
}

// matrixParams is the number of weights in the matrices a token's forward
// pass reads: every layer's projections and the (possibly tied) lm_head.
func matrixParams(c Config) float64 {
	h, qd, kvd, in := float64(c.Hidden), float64(c.Heads*c.HeadDim), float64(c.KVHeads*c.HeadDim), float64(c.Intermediate)
	return float64(c.Layers)*(h*qd*2+h*kvd*2+3*h*in) + float64(c.VocabSize)*h
}

// decodeMatrixWords are the matrices one decoding step of m reads (each
// layer's projections and the lm_head, once when tied), in the layout
// its products read (the bf16 path's packed copy where it is on), as
// 64-bit words.
//
// The decode's read probe reads decodeMatrixWords rather than a buffer of
// its own: the same bytes, so the same pages and page sizes, and as many
// of them. A buffer of its own need not stand for the model's memory: on
// the Zen 4 VM a 1 GiB buffer read 33.5 GB/s beside the float32 model and
// 56.4 beside the bfloat16 one in the same process. The matrices come
// from a hugeSlab, as loading puts them: every byte in huge pages.
func decodeMatrixWords(m *Model) [][]uint64 {
	var ws [][]uint64
	seen := map[*uint64]bool{}
	add := func(x mat) {
		var w []uint64
		switch {
		case x.vn != nil:
			w = bf16Words(x.vn)
		case x.bf != nil:
			w = bf16Words(x.bf)
		default:
			w = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(x.data))), len(x.data)/2)
		}
		if len(w) > 0 && !seen[&w[0]] {
			seen[&w[0]] = true
			ws = append(ws, w)
		}
	}
	for _, l := range m.w.layers {
		for _, x := range []mat{l.q, l.k, l.v, l.o, l.gate, l.up, l.down} {
			add(x)
		}
	}
	add(m.w.lmHead)
	return ws
}

// bf16Words is a bfloat16 matrix's storage as 64-bit words, for the read
// probe.
func bf16Words(x []uint16) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(x))), len(x)/4)
}

// readProbe is one way to sum a core's part of the buffer.
type readProbe struct {
	name string
	read func([]uint64) uint64
}

// probeRounds is how many times fastestRead reads the bytes with each
// variant.
const probeRounds = 2

// fastestRead is the read bandwidth over bufs, in bytes/s, and the
// variant that reached it: every read variant (readProbes) reads bufs
// once a round for probeRounds rounds, the variants in turn within a
// round, and the fastest single reading is the limit. The cores can keep
// a different number of lines in flight depending on how they are read
// (one 512-bit stream per core read 12.9-18.9 GB/s on the Xeon, at times
// less than decoding itself streamed), so the limit is the best way to
// read the same bytes, measured beside every decode: a variant picked
// once per process, from its best of two passes, was decided by one noisy
// pass and under load kept one (S1T0-1K) that read slower than the
// decoding kernel. Interleaving the variants spreads a burst of load over
// them rather than over all of one variant's passes; load only makes
// readings slower, so the fastest reading is the least disturbed one.
func fastestRead(bufs [][]uint64) (float64, string) { return fastestReadOf(readProbes(), bufs) }

// fastestReadOf is fastestRead over the variants ps.
func fastestReadOf(ps []readProbe, bufs [][]uint64) (float64, string) {
	best, name := 0.0, ""
	for i, bw := range variantReads(ps, bufs) {
		if bw > best {
			best, name = bw, ps[i].name
		}
	}
	return best, name
}

// variantReads is fastestReadOf's readings: the fastest of each variant
// of ps over bufs, in bytes/s, indexed like ps.
func variantReads(ps []readProbe, bufs [][]uint64) []float64 {
	bws := make([]float64, len(ps))
	for range probeRounds {
		for i, p := range ps {
			bws[i] = max(bws[i], bandwidthOver(p.read, bufs, 1))
		}
	}
	return bws
}

// bandwidthWith is the best of five parallel reads of bandwidthBuf (a
// buffer of its own, for BenchmarkReadBandwidth's per-variant figures)
// with sum reading each core's part.
func bandwidthWith(sum func([]uint64) uint64) float64 {
	return bandwidthOver(sum, [][]uint64{bandwidthBuf()}, 5)
}

// bandwidthOver is the best of passes parallel reads of bufs, in bytes/s:
// each core reads its share of every buffer in turn with sum, as a
// decoding step splits each product's matrix over the cores.
func bandwidthOver(sum func([]uint64) uint64, bufs [][]uint64, passes int) float64 {
	procs := runtime.GOMAXPROCS(0)
	sums := make([]uint64, procs)
	words := 0
	for _, buf := range bufs {
		words += len(buf) / procs &^ 255 * procs
	}
	best := 0.0
	for range passes {
		var wg sync.WaitGroup
		t0 := time.Now()
		for p := range procs {
			wg.Go(func() {
				for _, buf := range bufs {
					chunk := len(buf) / procs &^ 255
					sums[p] += sum(buf[p*chunk : (p+1)*chunk])
				}
			})
		}
		wg.Wait()
		best = max(best, float64(8*words)/time.Since(t0).Seconds())
	}
	return best
}

// BenchmarkReadBandwidth reports every probe's bandwidth over a 1 GiB
// buffer (over three times this VM's 300 MiB L3; best of five passes;
// GB/s-<probe>), the fastest of them, and the scalar 64-bit sum for
// comparison, in the same run.
func BenchmarkReadBandwidth(b *testing.B) {
	ps := readProbes()
	rates := make([]float64, len(ps))
	var scalar float64
	for b.Loop() {
		for i, p := range ps {
			rates[i] += bandwidthWith(p.read)
		}
		scalar += bandwidthWith(sumWords)
	}
	best := 0.0
	for i, p := range ps {
		b.ReportMetric(rates[i]/float64(b.N)/1e9, "GB/s-"+p.name)
		best = max(best, rates[i])
	}
	b.ReportMetric(best/float64(b.N)/1e9, "GB/s-read")
	b.ReportMetric(scalar/float64(b.N)/1e9, "GB/s-read-scalar")
}

// bandwidthBuf is BenchmarkReadBandwidth's buffer, written once (so its pages are
// real) and kept for the process.
var bandwidthBuf = sync.OnceValue(func() []uint64 {
	buf := make([]uint64, 128<<20)
	for i := range buf {
		buf[i] = uint64(i)
	}
	return buf
})

func sumWords(s []uint64) uint64 {
	var a, b, c, d uint64
	for i := 0; i+4 <= len(s); i += 4 {
		a, b, c, d = a+s[i], b+s[i+1], c+s[i+2], d+s[i+3]
	}
	return a + b + c + d
}

// TestReadProbesSum requires every bandwidth probe to read every word of
// its part once: a probe that skipped lines would report a bandwidth it
// never read.
func TestReadProbesSum(t *testing.T) {
	s := make([]uint64, 256*8*3+256)
	for i := range s {
		s[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	want := sumWords(s)
	for _, p := range readProbes() {
		if got := p.read(s); got != want {
			t.Errorf("probe %s: sum %#x, want %#x", p.name, got, want)
		}
	}
}

// TestFastestReadProbesEveryVariant requires the decode probe to read
// every byte with every variant in every round (so no single pass picks
// the variant) and to name one of them as the fastest.
func TestFastestReadProbesEveryVariant(t *testing.T) {
	bufs := [][]uint64{make([]uint64, 1<<14), make([]uint64, 3<<12)}
	procs := runtime.GOMAXPROCS(0)
	want := 0
	for _, buf := range bufs {
		want += len(buf) / procs &^ 255 * procs
	}
	var mu sync.Mutex
	read := map[string]int{}
	variant := func(name string) readProbe {
		return readProbe{name, func(s []uint64) uint64 {
			mu.Lock()
			read[name] += len(s)
			mu.Unlock()
			return sumWords(s)
		}}
	}
	ps := []readProbe{variant("a"), variant("b"), variant("c")}
	bw, name := fastestReadOf(ps, bufs)
	for _, p := range ps {
		if read[p.name] != probeRounds*want {
			t.Errorf("variant %s read %d words, want %d (%d rounds of %d)", p.name, read[p.name], probeRounds*want, probeRounds, want)
		}
	}
	if read[name] == 0 || bw <= 0 {
		t.Errorf("fastest variant %q at %g B/s, want one of the variants read", name, bw)
	}
}

// TestPoolReadEveryWord requires poolRead to read every word of every
// buffer once (the whole 256-word groups bandwidthOver counts), over
// buffers of several pieces and a partial one.
func TestPoolReadEveryWord(t *testing.T) {
	bufs := [][]uint64{make([]uint64, 2*readPiece+512), make([]uint64, 1000)}
	want := 0
	for i, buf := range bufs {
		for j := range buf {
			buf[j] = uint64(i*7 + j)
		}
		want += len(buf) &^ 255
	}
	var mu sync.Mutex
	read := 0
	bw := poolRead(func(s []uint64) uint64 {
		mu.Lock()
		read += len(s)
		mu.Unlock()
		return sumWords(s)
	}, bufs)
	if read != want || bw <= 0 {
		t.Errorf("poolRead read %d words at %g B/s, want %d", read, bw, want)
	}
}

// TestPairShares requires each token to be set against the faster of the
// readings just before and just after it, and the figure to be the median
// token's share: a token paired with a reading from elsewhere, or with
// the slower one, would not give the limit at its moment.
func TestPairShares(t *testing.T) {
	// 1 GB a token; readings 10, 20, 40, 20 GB/s around three tokens of
	// 100, 80 and 50 ms: shares of 20, 40 and 40 GB/s are 50, 31.25, 50%.
	toks := []time.Duration{100 * time.Millisecond, 80 * time.Millisecond, 50 * time.Millisecond}
	share, limit := pairShares(1e9, toks, []float64{10e9, 20e9, 40e9, 20e9})
	if math.Abs(share-50) > 1e-9 || limit != 40e9 {
		t.Errorf("pairShares = %g%%, %g B/s; want 50%%, 40e9", share, limit)
	}
}

// TestDecodeMatrixWordsBF16 requires the decode probe (decodeMatrixWords) to
// read exactly the bytes measureDecode counts a token as reading
// (matrixParams), for float32 and bfloat16 weights and a tied and an
// untied lm_head: a probe over fewer or more bytes, or over a matrix
// twice, would not be the limit of that decode.
func TestDecodeMatrixWordsBF16(t *testing.T) {
	for _, arch := range []models.Family{models.Llama3, models.Qwen3} {
		c := smallConfig(arch)
		ts := randomTensors(c, 1)
		for _, size := range []int{4, 2} {
			if size == 2 {
				matricesToBF16(ts)
			}
			m, err := New("small", c, ts)
			if err != nil {
				t.Fatal(err)
			}
			words := 0
			for _, w := range decodeMatrixWords(m) {
				words += len(w)
			}
			if want := matrixParams(c) * float64(size); float64(8*words) != want {
				t.Errorf("%s, %d-byte weights: the probe reads %d bytes, a token %g", arch, size, 8*words, want)
			}
		}
	}
}
