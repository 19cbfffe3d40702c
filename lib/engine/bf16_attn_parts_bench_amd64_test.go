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

// BenchmarkBF16AttnParts times the bf16 path's attention, a row's KV head
// (two query heads, heads of 128) a unit, in parts, against reads of the
// same bytes: BP_UNITS (default 96) units of BP_POS (default 2048) keys
// and values, claimed by BP_PROCS cores (default 2) as BenchmarkDecodeLong's
// attention alone does, L3 evicted before each pass. Parts (BP_PARTS,
// comma-separated; default all): scores (bf16ScoreTiles), values
// (bf16Tiles), both (scores, softmax, values), bothclear (both clearing
// the tiles' rows past the unit's own, as attendBF16 does), readk and
// readv (the keys, the values with 512-bit loads) and every read
// probe's variant over the keys. The parts alternate in
// BP_ROUNDS rounds (default 5), the order reversed every other round;
// each prints its median pass, the bytes a second it read (the keys'
// for a probe) and the first part's pass over its, per round: median
// and lower quartile. Run with -benchtime 1x.
func BenchmarkBF16AttnParts(b *testing.B) {
	if !bf16Compute() {
		b.Skip("this CPU has no AVX512-BF16: no bf16 compute path")
	}
	const hd, group = 128, 2
	P, U := envInt("BP_POS", 2048), envInt("BP_UNITS", 96)
	procs := envInt("BP_PROCS", 2)
	kvs := make([]bf16KV, U)
	var wg sync.WaitGroup
	for u := range kvs {
		wg.Go(func() {
			ks, vs := make([]float32, P*hd), make([]float32, P*hd)
			fillUniform(ks, uint64(u+1), 1.7)
			fillUniform(vs, uint64(u+99), 0.5)
			kvs[u].pack(ks, vs, 0, P, hd, 0, hd)
		})
	}
	wg.Wait()
	ld := bf16Cols(P)
	type work struct {
		q, p []uint16
		sc   []float32
		out  []float32
	}
	ws := make([]work, procs)
	for i := range ws {
		ws[i] = work{q: make([]uint16, 32*hd), p: make([]uint16, 32*ld), sc: make([]float32, 32*ld), out: make([]float32, 32*hd)}
		q := make([]float32, group*hd)
		fillUniform(q, 5, 1)
		for j := range group {
			bf16RoundRow(&ws[i].q[j*hd], &q[j*hd], hd)
		}
	}
	scale := float32(1 / math.Sqrt(hd))
	probes := map[string]func([]uint64) uint64{}
	var names []string
	for _, p := range readProbes() {
		probes[p.name] = p.read
		names = append(names, p.name)
	}
	run := func(part string) float64 {
		return coldUnits(procs, U, func(w, k int) {
			wk := &ws[w]
			kv := &kvs[k]
			switch part {
			case "scores":
				bf16ScoreTiles(wk.q, hd, group, kv.k, 16*hd, hd, ld/16, wk.sc, ld)
			case "values":
				bf16Tiles(wk.p, ld, group, kv.vt, 16*kv.ldk, ld, hd/16, wk.out, hd)
			case "both":
				bf16ScoreTiles(wk.q, hd, group, kv.k, 16*hd, hd, ld/16, wk.sc, ld)
				for j := range group {
					bf16Softmax(&wk.p[j*ld], &wk.sc[j*ld], ld, scale, float32(math.Inf(-1)))
				}
				bf16Tiles(wk.p, ld, group, kv.vt, 16*kv.ldk, ld, hd/16, wk.out, hd)
			case "bothclear":
				clear(wk.q[group*hd:])
				bf16ScoreTiles(wk.q, hd, group, kv.k, 16*hd, hd, ld/16, wk.sc, ld)
				clear(wk.p[group*ld:])
				for j := range group {
					sc := wk.sc[j*ld : (j+1)*ld]
					fillF32(sc[P:], float32(math.Inf(-1)))
					bf16Softmax(&wk.p[j*ld], &wk.sc[j*ld], ld, scale, float32(math.Inf(-1)))
				}
				bf16Tiles(wk.p, ld, group, kv.vt, 16*kv.ldk, ld, hd/16, wk.out, hd)
			case "readk":
				s := unsafe.Slice((*uint64)(unsafe.Pointer(&kv.k[0])), ld*hd/4)
				evictSink += sumWordsWide(s)
			case "readv":
				s := unsafe.Slice((*uint64)(unsafe.Pointer(&kv.vt[0])), ld*hd/4)
				evictSink += sumWordsWide(s)
			default:
				s := unsafe.Slice((*uint64)(unsafe.Pointer(&kv.k[0])), ld*hd/4)
				evictSink += probes[part](s)
			}
		}).Seconds()
	}
	bytesHalf := float64(U) * float64(ld*hd*2)
	parts := append([]string{"readk", "readv", "scores", "values", "both"}, names...)
	if e := os.Getenv("BP_PARTS"); e != "" {
		parts = strings.Split(e, ",")
	}
	for b.Loop() {
		ts := make([][]float64, len(parts))
		for r := range envInt("BP_ROUNDS", 5) {
			for i := range parts {
				if r%2 == 1 {
					i = len(parts) - 1 - i
				}
				ts[i] = append(ts[i], run(parts[i]))
			}
		}
		for i, part := range parts {
			by := bytesHalf
			if strings.HasPrefix(part, "both") {
				by *= 2
			}
			var rs []float64
			for r := range ts[i] {
				rs = append(rs, ts[0][r]/ts[i][r])
			}
			slices.Sort(rs)
			fmt.Fprintf(os.Stderr, "part %s P=%d procs=%d: median %.2f ms, %.1f GB/s; %s/it median %.3f q1 %.3f | load %s\n", part, P, procs, 1e3*median(ts[i]), by/median(ts[i])/1e9, parts[0], rs[len(rs)/2], rs[len(rs)/4], loadAvg())
		}
	}
}
