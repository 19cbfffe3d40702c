//go:build goexperiment.simd && amd64

package engine

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// BenchmarkF32AttnParts is BenchmarkBF16AttnParts for the float32 path:
// a lone row's blocked attention (attendHeadsBlocked, the fused fork's
// units) in parts against reads of the same bytes, to find which part
// keeps it from the read probe's rate at long positions. A unit is one
// row-layer's keys and values (FP_POS positions, default 2048, of the
// 0.6B shape's 8 KV heads of 128, two query heads each), cut into
// FP_SPLIT parts of its KV heads (default 1; 2 is R = 1's two halves);
// FP_UNITS rows (default 12; 4 and 1 are a layer of R = 4 and R = 1) are
// claimed by FP_PROCS cores (default 2) as longAttention's are, L3
// evicted before each pass (FP_HOT=1: not evicted, FP_ROWS=1: every unit
// the same row, for the kernels' rate from L2). Parts (FP_PARTS,
// comma-separated): any read probe's name (readProbes: over the unit's
// share of the keys, then of the values, contiguous), scores (the
// blocked score calls alone), sums<b> (the blocked weighted sums alone,
// blocks of b positions, default loneBlockRows), all
// (attendHeadsBlocked: scores, softmax, sums), heads (attendKVHeadAsm
// head by head, the unblocked form). The parts alternate in FP_ROUNDS
// rounds (default 7), the order reversed every other round; each prints
// its median pass and process CPU (which includes the eviction pass),
// the bytes a second it read and its rate over the first part's per
// round (median [min, max]), apart for the rounds where the first part
// read at least FP_FAST_GBS (default 45: the host's fast phase) and the
// rest. Run with -benchtime 1x.
func BenchmarkF32AttnParts(b *testing.B) {
	const hd, group, kvh = 128, 2, 8
	const kvd = kvh * hd
	P, U := envInt("FP_POS", 2048), envInt("FP_UNITS", 12)
	procs, split := envInt("FP_PROCS", 2), envInt("FP_SPLIT", 1)
	if kvh%split != 0 {
		b.Fatalf("FP_SPLIT=%d: want a divisor of %d", split, kvh)
	}
	type rowKV struct{ k, v []float32 }
	rows := make([]rowKV, min(U, envInt("FP_ROWS", U))) // unit k reads row k mod FP_ROWS
	var wg sync.WaitGroup
	for u := range rows {
		wg.Go(func() {
			rows[u] = rowKV{make([]float32, P*kvd), make([]float32, P*kvd)}
			fillUniform(rows[u].k, uint64(u+1), 1.7)
			fillUniform(rows[u].v, uint64(u+99), 0.5)
		})
	}
	wg.Wait()
	ld := (P + 3) &^ 3
	type work struct {
		q, out, sc []float32
		buf        []float32
	}
	ws := make([]work, procs)
	for i := range ws {
		ws[i] = work{q: make([]float32, kvh*group*hd), out: make([]float32, kvh*group*hd), sc: make([]float32, kvh*group*ld)}
		fillUniform(ws[i].q, 5, 1)
		fillUniform(ws[i].sc, 7, 1.0/float32(P))
	}
	scale := float32(1 / math.Sqrt(hd))
	probes := map[string]func([]uint64) uint64{}
	for _, p := range readProbes() {
		probes[p.name] = p.read
	}
	per := kvh / split
	hot := os.Getenv("FP_HOT") == "1" // no eviction: the rows stay in L2 if they fit
	run := func(part string) (float64, float64) {
		units := coldUnits
		if hot {
			units = hotUnits
		}
		c0 := processCPU()
		t := units(procs, U*split, func(w, k int) {
			wk := &ws[w]
			r := &rows[k/split%len(rows)]
			kv0 := (k % split) * per
			kv1 := kv0 + per
			if blk, ok := sumsBlock(part); ok {
				blockedSums(wk.out, wk.sc, ld, r.v, kvd, hd, group, P, kv0, kv1, blk)
				return
			}
			switch part {
			case "scores":
				blockedScores(wk.sc, ld, wk.q, r.k, kvd, hd, group, P, kv0, kv1, loneBlockRows)
			case "all":
				if !attendHeadsBlocked(&wk.buf, wk.q, wk.out, r.k, r.v, kvd, hd, group, P, kv0, kv1, scale, nil) {
					panic("attendHeadsBlocked did not run")
				}
			case "heads":
				for h := kv0; h < kv1; h++ {
					if !attendKVHeadAsm(&wk.buf, wk.q, wk.out, r.k, r.v, kvd, hd, group, P, h, scale, nil) {
						panic("attendKVHeadAsm did not run")
					}
				}
			default:
				probe := probes[part]
				if probe == nil {
					panic("unknown part " + part)
				}
				n := len(r.k) / split
				for _, x := range [][]float32{r.k, r.v} {
					s := x[(k%split)*n : (k%split+1)*n]
					evictSink += probe(unsafe.Slice((*uint64)(unsafe.Pointer(&s[0])), len(s)/2))
				}
			}
		})
		return t.Seconds(), processCPU() - c0
	}
	half := float64(U) * float64(P*kvd*4)
	parts := []string{"S4T1-1K", "S8T1-1K", "scores", "sums", "all", "heads"}
	if e := os.Getenv("FP_PARTS"); e != "" {
		parts = strings.Split(e, ",")
	}
	for _, p := range parts {
		_, sums := sumsBlock(p)
		if _, ok := probes[p]; !ok && !sums && !slices.Contains([]string{"scores", "all", "heads"}, p) {
			b.Fatalf("FP_PARTS: %q is neither a part nor a read probe (readProbes)", p)
		}
	}
	fast := float64(envInt("FP_FAST_GBS", 45)) * 1e9
	bytesOf := func(part string) float64 {
		if strings.HasPrefix(part, "scores") || strings.HasPrefix(part, "sums") {
			return half
		}
		return 2 * half
	}
	for b.Loop() {
		ts := make([][]float64, len(parts))
		cs := make([][]float64, len(parts))
		l0 := loadAvg()
		for r := range envInt("FP_ROUNDS", 7) {
			for i := range parts {
				if r%2 == 1 {
					i = len(parts) - 1 - i
				}
				t, c := run(parts[i])
				ts[i], cs[i] = append(ts[i], t), append(cs[i], c)
			}
		}
		for i, part := range parts {
			// its bytes a second over the first part's, each round, apart
			// in the rounds where the first part read at least
			// FP_FAST_GBS (the host's fast phase) and the rest
			var rs [2][]float64
			for r := range ts[i] {
				ref := bytesOf(parts[0]) / ts[0][r]
				c := 0
				if ref >= fast {
					c = 1
				}
				rs[c] = append(rs[c], (bytesOf(part)/ts[i][r])/ref)
			}
			fig := ""
			for c, name := range []string{"slow", "fast"} {
				x := rs[c]
				if len(x) == 0 {
					continue
				}
				slices.Sort(x)
				fig += fmt.Sprintf(" %s(%d) %.3f [%.3f, %.3f]", name, len(x), x[len(x)/2], x[0], x[len(x)-1])
			}
			fmt.Fprintf(os.Stderr, "f32 part %-8s P=%d split=%d: median %.2f ms (cpu %.2f), %.1f GB/s; rate/%s:%s | load %s -> %s\n",
				part, P, split, 1e3*median(ts[i]), 1e3*median(cs[i]), bytesOf(part)/median(ts[i])/1e9, parts[0], fig, l0, loadAvg())
		}
	}
}

// sumsBlock reports whether part is BenchmarkF32AttnParts' sums (blocks
// of loneBlockRows positions) or sums<b> (blocks of b), and b.
func sumsBlock(part string) (int, bool) {
	if part == "sums" {
		return loneBlockRows, true
	}
	var b int
	if _, err := fmt.Sscanf(part, "sums%d", &b); err != nil || b < 1 {
		return 0, false
	}
	return b, true
}
