//go:build goexperiment.simd && amd64

package engine

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/tinkershell/tinker/lib/models"
)

// TestRowLongMatchesDotLanes requires every long-stream kernel to give
// dotLanes' bits for each of its 16 rows (stream s, row g of it at
// s·span+g·stride), with tails, odd chunk counts and rows at odd offsets.
func TestRowLongMatchesDotLanes(t *testing.T) {
	if !fwdAsm {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	r := newRNG(11)
	for _, n := range []int{1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 1024, 1040, 1055, 3072} {
		for _, k := range rowLongKernels {
			groups := 16 / rowLongStreams
			stride := n + 3
			span := groups*stride + 5
			size := (rowLongStreams-1)*span + (groups-1)*stride + n
			x := make([]float32, n)
			fill(x, r, 1)
			w := make([]float32, size)
			fill(w, r, 1)
			wb := make([]uint16, size)
			for i := range w {
				wb[i] = uint16(math.Float32bits(w[i]) >> 16)
				w[i] = bf16(wb[i])
			}
			var got, gotB [16]float32
			k.f32(&x[0], &w[0], stride, n, span, &got)
			k.bf16(&x[0], &wb[0], stride, n, span, &gotB)
			for s := range rowLongStreams {
				for g := range groups {
					o := s*span + g*stride
					want := dotLanes(w[o:o+n], x)
					i := s*groups + g
					if math.Float32bits(got[i]) != math.Float32bits(want) || math.Float32bits(gotB[i]) != math.Float32bits(want) {
						t.Errorf("%s n=%d stream %d row %d: f32 %v, bf16 %v, dotLanes %v", k.name, n, s, g, got[i], gotB[i], want)
					}
				}
			}
		}
	}
}

// BenchmarkRowLong compares the long-stream kernels with fwdRow16 on two
// threads from memory: 480 MB of bfloat16 (240 MB of float32) matrices of
// the 0.6B layer shapes in huge pages, each layer's products cut as
// decode cuts them (decodePieces over q/k/v, o, gate/up, down) and the
// pieces claimed by two goroutines. Per kernel the paired ratios
// fwdRow16's time over the kernel's (above 1: the kernel faster), process
// CPU and wall, median and minimum over the rounds, the order alternating.
// ROWLONG_ROUNDS, ROWLONG_KERNELS (a regexp) and ROWLONG_F32=1 select.
// Run with -benchtime 1x.
func BenchmarkRowLong(b *testing.B) {
	rounds, passes := 9, 2
	passes = envInt("ROWLONG_PASSES", passes)
	rounds = envInt("ROWLONG_ROUNDS", rounds)
	only := regexp.MustCompile(os.Getenv("ROWLONG_KERNELS"))
	withF32 := os.Getenv("ROWLONG_F32") == "1"
	shapes := [][2]int{{2048, 1024}, {1024, 1024}, {1024, 1024}, {1024, 2048}, {3072, 1024}, {3072, 1024}, {1024, 3072}}
	forks := [][2]int{{0, 3}, {3, 4}, {4, 6}, {6, 7}}
	layers := 16
	if os.Getenv("ROWLONG_LMHEAD") == "1" { // the lm_head alone, four copies
		shapes, forks, layers = [][2]int{{151936, 1024}}, [][2]int{{0, 1}}, 4
	}
	var slab hugeSlab
	var mb, mf [][]mat // a fork's matrices
	r := newRNG(3)
	for c := range layers {
		var lb, lf []mat
		for _, sh := range shapes {
			w := hugeSlabAlloc[uint16](&slab, sh[0]*sh[1])
			for i := range w {
				w[i] = uint16(math.Float32bits(float32(2*r.float64()-1)) >> 16)
			}
			lb = append(lb, mat{rows: sh[0], cols: sh[1], bf: w})
			if c < layers/2 && withF32 {
				wf := hugeSlabAlloc[float32](&slab, sh[0]*sh[1])
				for i := range wf {
					wf[i] = float32(2*r.float64() - 1)
				}
				lf = append(lf, mat{rows: sh[0], cols: sh[1], data: wf})
			}
		}
		for _, f := range forks {
			mb = append(mb, lb[f[0]:f[1]])
			if lf != nil {
				mf = append(mf, lf[f[0]:f[1]])
			}
		}
	}
	x := make([]float32, 3072)
	fill(x, r, 1)
	// run runs piece over every fork's decodePieces on the engine's workers.
	run := func(groups [][]mat, piece func(m mat, lo, hi int)) func() {
		cuts := make([][]rowPiece, len(groups))
		for i, ms := range groups {
			cuts[i] = decodePieces(ms, 16, 2)
		}
		return func() {
			for range passes {
				for i, ms := range groups {
					ps := cuts[i]
					forkJoin(len(ps), func(j int) {
						p := ps[j]
						piece(ms[p.w], p.lo, p.hi)
					})
				}
			}
		}
	}
	row16 := func(m mat, lo, hi int) {
		var out [16]float32
		for j := lo; j < hi; j += 16 {
			if m.bf != nil {
				fwdRow16BF16(&x[0], &m.bf[j*m.cols], m.cols, m.cols, &out)
			} else {
				fwdRow16F32(&x[0], &m.data[j*m.cols], m.cols, m.cols, &out)
			}
		}
	}
	long := func(k int) func(m mat, lo, hi int) {
		kk := rowLongKernels[k]
		g := 16 / rowLongStreams
		return func(m mat, lo, hi int) {
			var out [16]float32
			q := (hi - lo) / rowLongStreams
			for i := 0; i < q; i += g {
				if m.bf != nil {
					kk.bf16(&x[0], &m.bf[(lo+i)*m.cols], m.cols, m.cols, q*m.cols, &out)
				} else {
					kk.f32(&x[0], &m.data[(lo+i)*m.cols], m.cols, m.cols, q*m.cols, &out)
				}
			}
		}
	}
	probe := func(k func(*uint64, int, int, int, *[8]uint64), streams int) func(m mat, lo, hi int) {
		return func(m mat, lo, hi int) {
			w := m.bf[lo*m.cols : hi*m.cols]
			readStreamsSum(k, streams, 1024, unsafe.Slice((*uint64)(unsafe.Pointer(&w[0])), len(w)/4))
		}
	}
	// forkOf runs piece over fork i of groups (decodePieces) on two
	// the engine's workers (forkJoin), as decode runs them.
	// ROWLONG_THREADS=1: the fine comparison's pieces on the calling
	// goroutine alone (one core's in-flight reads the limit, as in the
	// host's fast phase, where each core needs ~29 GB/s).
	oneThread := os.Getenv("ROWLONG_THREADS") == "1"
	cuts := map[*mat][]rowPiece{}
	forkOf := func(groups [][]mat, i int, piece func(m mat, lo, hi int)) {
		ms := groups[i]
		ps, ok := cuts[&ms[0]]
		if !ok {
			ps = decodePieces(ms, 16, 2)
			cuts[&ms[0]] = ps
		}
		if oneThread {
			for _, p := range ps {
				piece(ms[p.w], p.lo, p.hi)
			}
			return
		}
		forkJoin(len(ps), func(j int) {
			p := ps[j]
			piece(ms[p.w], p.lo, p.hi)
		})
	}
	var rates string // the last fine comparison's GB/s, a and b
	// fine interleaves a and b fork by fork, each on its own layers
	// (alternate layers, swapped every round, so neither reads what the
	// other left in L3): per round a's time over b's, process CPU and wall.
	fine := func(groups [][]mat, a0, b0 func(m mat, lo, hi int)) (cpu, wall []float64) {
		nf := len(forks)
		var bytes, ta, tb float64
		for _, ms := range groups[:len(groups)/2] {
			for _, m := range ms {
				size := 2
				if m.bf == nil {
					size = 4
				}
				bytes += float64(m.rows * m.cols * size)
			}
		}
		defer func() {
			rates = fmt.Sprintf("GB/s %.1f / %.1f", bytes*float64(rounds)/ta/1e9, bytes*float64(rounds)/tb/1e9)
		}()
		for i := range rounds {
			var ca, cb, wa, wb float64
			for l := 0; l+1 < len(groups)/nf; l += 2 {
				for f := range nf {
					la, lb := l, l+1
					if i%2 == 1 {
						la, lb = lb, la
					}
					first := (l/2+f)%2 == 0
					for k := range 2 {
						c0, w0 := processCPU(), wallClock()
						if (k == 0) == first {
							forkOf(groups, la*nf+f, a0)
							ca, wa = ca+processCPU()-c0, wa+wallClock()-w0
						} else {
							forkOf(groups, lb*nf+f, b0)
							cb, wb = cb+processCPU()-c0, wb+wallClock()-w0
						}
					}
				}
			}
			cpu, wall = append(cpu, ca/cb), append(wall, wa/wb)
			ta, tb = ta+wa, tb+wb
		}
		slices.Sort(cpu)
		slices.Sort(wall)
		return cpu, wall
	}
	ratios := func(a0, b0 func()) (cpu, wall []float64) {
		for i := range rounds {
			a, bb := a0, b0
			if i%2 == 1 {
				a, bb = b0, a0
			}
			c0, w0 := processCPU(), wallClock()
			a()
			c1, w1 := processCPU(), wallClock()
			bb()
			c2, w2 := processCPU(), wallClock()
			rc, rw := (c1-c0)/(c2-c1), (w1-w0)/(w2-w1)
			if i%2 == 1 {
				rc, rw = 1/rc, 1/rw
			}
			cpu, wall = append(cpu, rc), append(wall, rw)
		}
		slices.Sort(cpu)
		slices.Sort(wall)
		return cpu, wall
	}
	fineMode := os.Getenv("ROWLONG_FINE") == "1"
	pair := func(groups [][]mat, a, b func(m mat, lo, hi int)) (cpu, wall []float64) {
		if fineMode {
			return fine(groups, a, b)
		}
		return ratios(run(groups, a), run(groups, b))
	}
	load := loadAvg
	report := func(name string, cpu, wall []float64, l0 string) {
		b.ReportMetric(cpu[rounds/2], name+"-cpu")
		b.ReportMetric(wall[rounds/2], name+"-wall")
		fmt.Fprintf(os.Stderr, "%-14s cpu med %.3f min %.3f max %.3f | wall med %.3f min %.3f max %.3f | load %s -> %s | %s\n",
			name, cpu[rounds/2], cpu[0], cpu[rounds-1], wall[rounds/2], wall[0], wall[rounds-1], l0, load(), rates)
		rates = ""
	}
	// ROWLONG_BASE=long: every comparison against fwdRowLong (A1K)
	// instead of fwdRow16.
	if os.Getenv("ROWLONG_BASE") == "long" {
		row16 = long(0)
	}
	for b.Loop() {
		// The probes' time over fwdRow16's on the same bfloat16 pieces
		// (below 1: the kernel slower than the probe).
		if only.MatchString("probe") {
			for _, p := range []struct {
				name    string
				k       func(*uint64, int, int, int, *[8]uint64)
				streams int
			}{{"S4T1-1K", readS4T1, 4}, {"S8T1-1K", readS8T1, 8}} {
				l0 := load()
				cpu, wall := pair(mb, probe(p.k, p.streams), row16)
				report("row16-of-"+p.name, cpu, wall, l0)
			}
		}
		if only.MatchString("same") {
			l0 := load()
			cpu, wall := pair(mb, row16, row16)
			report("same-bf16", cpu, wall, l0)
		}
		for k, kk := range rowLongKernels {
			if !only.MatchString(kk.name) {
				continue
			}
			l0 := load()
			cpu, wall := pair(mb, row16, long(k))
			report(kk.name+"-bf16", cpu, wall, l0)
			if mf != nil {
				l0 = load()
				cpu, wall = pair(mf, row16, long(k))
				report(kk.name+"-f32", cpu, wall, l0)
			}
		}
	}
}

// BenchmarkDecodeLongAB decodes the Qwen3-0.6B shape (bfloat16, or
// float32 with ROWLONG_DTYPE=f32) with fwdRowsLong and with fwdRow16
// (fwdLong false, the kernel before) in one process, the order alternating
// each round (ROWLONG_ROUNDS, default 12), and reports the paired ratios
// old time over new (above 1: fwdRowsLong faster), process CPU and wall
// a token, median and minimum. It fails if the two decodes' tokens or
// logprobs differ in any bit. Run with -benchtime 1x.
func BenchmarkDecodeLongAB(b *testing.B) {
	rounds := 12
	rounds = envInt("ROWLONG_ROUNDS", rounds)
	dtype := benchDType("ROWLONG_DTYPE")
	m := qwen3SmallOf(b, "rowlong-ab", dtype)
	defer func(v bool) { fwdLong = v }(fwdLong)
	sample := func(long bool) string {
		fwdLong = long
		seed := int64(1)
		r, err := m.Sample(context.Background(), SampleRequest{Prompt: []int{0}, NumSamples: 1, MaxTokens: 8, Temperature: 1, Seed: &seed})
		if err != nil {
			b.Fatal(err)
		}
		q := r.Sequences[0]
		bits := make([]uint32, len(q.Logprobs))
		for i, v := range q.Logprobs {
			bits[i] = math.Float32bits(v)
		}
		return fmt.Sprint(q.Tokens, bits)
	}
	if a, c := sample(false), sample(true); a != c {
		b.Fatalf("fwdRowsLong changed the decode:\n%s\n%s", c, a)
	}
	load := loadAvg
	for b.Loop() {
		var cpu, wall []float64
		l0 := load()
		for i := range rounds {
			var d [2]time.Duration
			var c [2]float64
			for k := range 2 {
				long := (k == 0) == (i%2 == 0)
				fwdLong = long
				d[btoi(long)], c[btoi(long)] = decodeTime(b, m, []int{0}, decodeTokens)
			}
			wall, cpu = append(wall, d[0].Seconds()/d[1].Seconds()), append(cpu, c[0]/c[1])
		}
		slices.Sort(cpu)
		slices.Sort(wall)
		b.ReportMetric(cpu[rounds/2], "old/new-cpu")
		b.ReportMetric(wall[rounds/2], "old/new-wall")
		fmt.Fprintf(os.Stderr, "decode %s old/new: cpu med %.3f min %.3f max %.3f | wall med %.3f min %.3f max %.3f | load %s -> %s\n",
			dtype, cpu[rounds/2], cpu[0], cpu[rounds-1], wall[rounds/2], wall[0], wall[rounds-1], l0, load())
	}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// timeTokens decodes tokens tokens after a one-token prompt on m and
// returns each decoded token's wall and process CPU seconds, calling
// set(t) before token t is computed (set(0) also before the prompt's
// prefill, which is not timed): the token-paired benchmarks' switch.
func timeTokens(b *testing.B, m *Model, tokens int, set func(t int)) (ws, cs []float64) {
	b.Helper()
	set(0)
	var w0, c0 float64
	stop := func(gen []int) bool {
		w1, c1 := wallClock(), processCPU()
		if len(gen) > 1 { // the first token was the prompt's prefill
			ws, cs = append(ws, w1-w0), append(cs, c1-c0)
		}
		set(len(ws))
		w0, c0 = wallClock(), processCPU()
		return false
	}
	seed := int64(1)
	if _, err := m.Sample(context.Background(), SampleRequest{Prompt: []int{0}, NumSamples: 1, MaxTokens: tokens + 1,
		Temperature: 1, Seed: &seed, StopFunc: stop}); err != nil {
		b.Fatal(err)
	}
	return ws, cs
}

// pairTokens runs rounds decodes of tokens tokens on m (timeTokens),
// labelling the tokens in turn (the first label by round) and calling
// set with each token's label before it is computed. It returns, sorted,
// each pair of neighbouring tokens' wall and CPU ratio, the unlabelled
// token's time over the labelled one's (above 1: the labelled variant
// faster), and the labelled and unlabelled tokens' wall times: the
// token-paired benchmarks' one pairing.
func pairTokens(b *testing.B, m *Model, rounds, tokens int, set func(on bool)) (cpu, wall, tOn, tOff []float64) {
	b.Helper()
	for i := range rounds {
		var on []bool // each token's label
		ws, cs := timeTokens(b, m, tokens, func(t int) {
			label := (t%2 == 1) == (i%2 == 0)
			on = append(on[:t], label)
			set(label)
		})
		for j, w := range ws {
			if on[j] {
				tOn = append(tOn, w)
			} else {
				tOff = append(tOff, w)
			}
		}
		for j := 1; j < len(ws); j++ {
			o, n := j-1, j
			if on[o] {
				o, n = n, o
			}
			wall, cpu = append(wall, ws[o]/ws[n]), append(cpu, cs[o]/cs[n])
		}
	}
	slices.Sort(cpu)
	slices.Sort(wall)
	b.ReportMetric(cpu[len(cpu)/2], "old/new-cpu")
	b.ReportMetric(wall[len(wall)/2], "old/new-wall")
	return cpu, wall, tOn, tOff
}

// BenchmarkDecodeLongTokens decodes the Qwen3-0.6B shape (bfloat16, or
// float32 with ROWLONG_DTYPE=f32) switching between fwdRowsLong and
// fwdRow16 after every token (from Sample's StopFunc, on the stepping
// goroutine, between forward steps), so neighbouring tokens, tens of
// milliseconds apart, pair the two: per pair the fwdRow16 token's time
// over the fwdRowsLong one's (above 1: fwdRowsLong faster), process CPU
// and wall, median and minimum over ROWLONG_TOKENS (default 96) tokens a
// decode, ROWLONG_ROUNDS decodes (default 4). Run with -benchtime 1x.
func BenchmarkDecodeLongTokens(b *testing.B) {
	rounds, tokens := 4, 96
	rounds = envInt("ROWLONG_ROUNDS", rounds)
	tokens = envInt("ROWLONG_TOKENS", tokens)
	dtype := benchDType("ROWLONG_DTYPE")
	m := qwen3SmallOf(b, "rowlong-tokens", dtype)
	defer func(v bool) { fwdLong = v }(fwdLong)
	load := loadAvg
	// ROWLONG_CONTROL=1 labels the tokens in turn but decodes all with
	// fwdRow16: the pairing's own bias and spread.
	control := os.Getenv("ROWLONG_CONTROL") == "1"
	bytes := matrixParams(m.cfg) * 2
	if dtype == "f32" {
		bytes *= 2
	}
	for b.Loop() {
		l0 := load()
		cpu, wall, tNew, tOld := pairTokens(b, m, rounds, tokens, func(on bool) { fwdLong = on && !control })
		k := len(wall)
		if control {
			dtype += " control"
		}
		fmt.Fprintf(os.Stderr, "decode %s tokens old/new (%d pairs): cpu med %.3f q1 %.3f min %.3f | wall med %.3f q1 %.3f min %.3f | load %s -> %s | GB/s old %.1f new %.1f (median tokens)\n",
			dtype, k, cpu[k/2], cpu[k/4], cpu[0], wall[k/2], wall[k/4], wall[0], l0, load(), bytes/median(tOld)/1e9, bytes/median(tNew)/1e9)
	}
}

// TestRowsLongOneMatchesScalar runs fwdRowsLong with one call a piece
// (rowsLongOne: fwdRowsLong<F32|BF16> storing each four rows itself, and
// its T0 arrangement, rowsLongT0) and
// with a fwdRowLong call and putRow copies per four rows, and wants every
// output's bits from matRowsScalar (dotLanes), the rows outside the piece
// untouched: one and three vectors (each alone), float32 and bfloat16
// weights, column counts with tails and odd chunk counts, pieces of 16,
// 48 and 80 rows (4, 12 and 20 rows a stream), written and accumulated.
// It fails if a row's sum went to another row or stream, or a piece's
// last rows were left out.
func TestRowsLongOneMatchesScalar(t *testing.T) {
	if !fwdAsm || !useSIMD {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	defer func(o, t0, m bool) { rowsLongOne, rowsLongT0, fwdRowMulti = o, t0, m }(rowsLongOne, rowsLongT0, fwdRowMulti)
	fwdRowMulti = false
	r := newRNG(19)
	for _, n := range []int{1, 15, 16, 17, 31, 33, 48, 63, 100, 1024, 1040, 1055, 3072} {
		for _, bf := range []bool{false, true} {
			const rows = 96
			w := randRowsMat(r, rows, n, bf)
			for _, m := range []int{1, 3} {
				xs := make([][]float32, m)
				for i := range xs {
					xs[i] = make([]float32, n)
					fill(xs[i], r, 1)
				}
				for _, acc := range []bool{false, true} {
					for _, span := range [][2]int{{16, 32}, {16, 64}, {0, 80}} {
						lo, hi := span[0], span[1]
						what := fmt.Sprintf("n=%d bf16=%v m=%d accumulate=%v rows %d-%d", n, bf, m, acc, lo, hi)
						base, outs := sameStartOutputs(r, m, rows)
						rowsLongOne = false
						fwdRowsLong(w, xs, outs[1], lo, hi, acc)
						matRowsScalar(w, xs, outs[2], lo, hi, acc)
						for _, t0 := range []bool{false, true} {
							for i := range base {
								copy(outs[0][i], base[i])
							}
							rowsLongOne, rowsLongT0 = true, t0
							fwdRowsLong(w, xs, outs[0], lo, hi, acc)
							for b := range m {
								for j := range rows {
									g, calls, want := outs[0][b][j], outs[1][b][j], outs[2][b][j]
									if math.Float32bits(g) != math.Float32bits(want) || math.Float32bits(calls) != math.Float32bits(want) {
										t.Fatalf("%s: y[%d][%d] = %v in one call (T0 %v), %v a call per four rows, %v scalar", what, b, j, g, t0, calls, want)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestDecodeRowsOneSameBits decodes (decodeSteps: prefills, steps of one
// to three rows, unfused and in one fork a step with the lm_head) with a
// piece's rows in one call (rowsLongOne) and a call per four rows, and
// wants every logit and every cached key and value to keep its bits,
// float32 and bfloat16 weights.
func TestDecodeRowsOneSameBits(t *testing.T) {
	decodeSwitchSameBits(t, "rows-one", &rowsLongOne)
}

// decodeSwitchSameBits decodes (decodeSteps) the small Qwen3 model in
// float32 and bfloat16, unfused and in one fork a step, with the kernel
// switch *sw off and on, and wants every logit and cached key and value
// to keep its bits.
func decodeSwitchSameBits(t *testing.T, name string, sw *bool) {
	if !fwdAsm || !useSIMD {
		t.Skip("the AVX-512 kernels need a CPU with AVX-512")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer func(o, v, l, k, h bool) {
		*sw, decodeFuse, fuseLayer, fuseToken, fuseHead = o, v, l, k, h
	}(*sw, decodeFuse, fuseLayer, fuseToken, fuseHead)
	for _, dtype := range []string{"f32", "bf16"} {
		m, _ := fuseTestModel(t, models.Qwen3, dtype, name, 13, 5)
		for _, forks := range []int{0, 4} {
			*sw = false
			logitsOff, cachesOff, _ := decodeSteps(t, m, forks, nil)
			*sw = true
			logitsOn, cachesOn, _ := decodeSteps(t, m, forks, nil)
			what := fmt.Sprintf("%s, forks %d:", dtype, forks)
			fuseSameBits(t, what+" logits", logitsOff, logitsOn)
			fuseSameBits(t, what+" caches", cachesOff, cachesOn)
		}
	}
}
