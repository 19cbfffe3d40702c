//go:build goexperiment.simd && amd64

package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// fixedCut cuts each matrix of ms into n pieces of equal rows (whole align
// blocks): no guidance, a core's pieces as long as they can be.
func fixedCut(n int) func(ms []mat, align, workers int) []rowPiece {
	return func(ms []mat, align, workers int) []rowPiece {
		var ps []rowPiece
		for i, w := range ms {
			step := (w.rows/n + align - 1) / align * align
			for lo := 0; lo < w.rows; lo += step {
				ps = append(ps, rowPiece{i, lo, min(lo+step, w.rows)})
			}
		}
		return ps
	}
}

// guidedCut is cutPieces with a share 1/(div·workers) of what is left,
// at least minPiece weights, whole multiples of align·a rows.
func guidedCut(div, minPiece, a int) func(ms []mat, align, workers int) []rowPiece {
	return func(ms []mat, align, workers int) []rowPiece {
		return cutPieces(nil, ms, align*a, div*workers, minPiece)
	}
}

// cutTo makes a cut decodeCut can take: it leaves dst and allocates.
func cutTo(cut func(ms []mat, align, workers int) []rowPiece) func(dst []rowPiece, ms []mat, align, workers int) []rowPiece {
	return func(_ []rowPiece, ms []mat, align, workers int) []rowPiece { return cut(ms, align, workers) }
}

// lmHeadCut cuts the lm_head's product (a lone matrix of over 64M
// weights) by lm and every other fork by decodePieces: a per-shape cut.
func lmHeadCut(lm func(ms []mat, align, workers int) []rowPiece) func(ms []mat, align, workers int) []rowPiece {
	return func(ms []mat, align, workers int) []rowPiece {
		if len(ms) == 1 && ms[0].rows*ms[0].cols >= 1<<26 {
			return lm(ms, align, workers)
		}
		return decodePieces(ms, align, workers)
	}
}

// BenchmarkDecodeCuts decodes the Qwen3-0.6B shape in bfloat16 (float32
// with CUTS_DTYPE=f32) with the row kernel fwdLong selects, switching
// forkDecode's cut of the pieces after every token (from StopFunc, on
// the stepping goroutine): main's decodePieces on every other token, a
// variant (in a fresh random order each cycle) on the tokens between.
// Each variant token is paired with the mean of its two decodePieces
// neighbours, tens of milliseconds apart: their time over its (above 1:
// the variant faster), process CPU and wall, median, lower quartile and
// minimum over CUTS_TOKENS tokens (default 400) a decode, CUTS_ROUNDS
// decodes (default 2). "control" is decodePieces under another label.
// Pieces never change a bit (each row is one kernel row); the decodes'
// tokens and logprobs are compared with decodePieces' first. "row16" is
// decodePieces with fwdRow16, the kernel before fwdRowsLong, for scale.
// CUTS_ONLY=a,b keeps the control and the variants named. Run with
// -benchtime 1x.
func BenchmarkDecodeCuts(b *testing.B) {
	rounds, tokens := 2, 400
	rounds = envInt("CUTS_ROUNDS", rounds)
	tokens = envInt("CUTS_TOKENS", tokens)
	type variant struct {
		name  string
		cut   func(ms []mat, align, workers int) []rowPiece
		row16 bool // fwdRow16 instead of fwdRowsLong: the kernel's own gain, for scale
	}
	vs := []variant{
		{name: "control", cut: decodePieces},
		{name: "div4-min32K", cut: guidedCut(4, 1<<15, 1)},  // decodePieces before 2026-11-30
		{name: "div2-min32K", cut: guidedCut(2, 1<<15, 1)},  // 1/4 of what is left
		{name: "div1-min32K", cut: guidedCut(1, 1<<15, 1)},  // 1/2 of what is left
		{name: "div4-min128K", cut: guidedCut(4, 1<<17, 1)}, // larger minimum
		{name: "div4-min512K", cut: guidedCut(4, 1<<19, 1)}, // 1 MiB of bfloat16 at least
		{name: "div1-min128K", cut: guidedCut(1, 1<<17, 1)},
		{name: "div1-min512K", cut: guidedCut(1, 1<<19, 1)},
		{name: "div2-min128K", cut: guidedCut(2, 1<<17, 1)}, // both
		{name: "div2-min64K", cut: guidedCut(2, 1<<16, 1)},
		{name: "div1-min64K", cut: guidedCut(1, 1<<16, 1)},
		{name: "div1-min128K-lm", cut: func(ms []mat, align, workers int) []rowPiece { // the lm_head as decodePieces
			if len(ms) == 1 && ms[0].rows*ms[0].cols >= 1<<26 {
				return decodePieces(ms, align, workers)
			}
			return guidedCut(1, 1<<17, 1)(ms, align, workers)
		}},
		{name: "div1-min256K", cut: guidedCut(1, 1<<18, 1)},
		{name: "div4-min32K-a64", cut: guidedCut(4, 1<<15, 4)}, // each stream whole 16-row blocks
		{name: "halves", cut: fixedCut(2)},
		{name: "fixed8", cut: fixedCut(8)},
		{name: "lm-halves", cut: lmHeadCut(fixedCut(2))},
		{name: "lm-div1", cut: lmHeadCut(guidedCut(1, 1<<15, 1))},
		{name: "lm-fixed16", cut: lmHeadCut(fixedCut(16))},
		{name: "row16", cut: decodePieces, row16: true},
	}
	if only := os.Getenv("CUTS_ONLY"); only != "" {
		keep := vs[:1]
		for _, v := range vs[1:] {
			if slices.Contains(strings.Split(only, ","), v.name) {
				keep = append(keep, v)
			}
		}
		vs = keep
	}
	dtype := benchDType("CUTS_DTYPE")
	m := qwen3SmallOf(b, "decode-cuts", dtype)
	defer func(f func(dst []rowPiece, ms []mat, align, workers int) []rowPiece) { decodeCut = f }(decodeCut)
	defer func(v bool) { fwdLong = v }(fwdLong)
	sample := func(v variant) string {
		decodeCut, fwdLong = cutTo(v.cut), !v.row16
		seed := int64(1)
		r, err := m.Sample(context.Background(), SampleRequest{Prompt: []int{0}, NumSamples: 1, MaxTokens: 6, Temperature: 1, Seed: &seed})
		if err != nil {
			b.Fatal(err)
		}
		q := r.Sequences[0]
		return fmt.Sprint(q.Tokens, q.Logprobs)
	}
	want := sample(variant{cut: decodePieces})
	for _, v := range vs[1:] {
		if got := sample(v); got != want {
			b.Fatalf("cut %s changed the decode:\n%s\n%s", v.name, got, want)
		}
	}
	load := loadAvg
	rng := rand.New(rand.NewPCG(7, 9))
	for b.Loop() {
		cpu := make([][]float64, len(vs))
		wall := make([][]float64, len(vs))
		var base []float64
		l0 := load()
		for range rounds {
			// seq is the cut of each token: -1 decodePieces, else a variant.
			var seq []int
			for len(seq) < tokens+2 {
				for _, k := range rng.Perm(len(vs)) {
					seq = append(seq, -1, k)
				}
			}
			seq = append(seq, -1)
			ws, cs := timeTokens(b, m, tokens, func(t int) {
				if seq[t] < 0 {
					decodeCut, fwdLong = decodePiecesTo, true
				} else {
					decodeCut, fwdLong = cutTo(vs[seq[t]].cut), !vs[seq[t]].row16
				}
			})
			for j := 1; j+1 < len(ws); j++ {
				if k := seq[j]; k >= 0 {
					wall[k] = append(wall[k], (ws[j-1]+ws[j+1])/2/ws[j])
					cpu[k] = append(cpu[k], (cs[j-1]+cs[j+1])/2/cs[j])
				} else {
					base = append(base, ws[j])
				}
			}
		}
		bytes := matrixParams(m.cfg) * 2
		if dtype == "f32" {
			bytes *= 2
		}
		fmt.Fprintf(os.Stderr, "decode cuts %s: load %s -> %s, decodePieces tokens read %.1f GB/s (median)\n", dtype, l0, load(), bytes/median(base)/1e9)
		for k, v := range vs {
			w, c := wall[k], cpu[k]
			slices.Sort(w)
			slices.Sort(c)
			n := len(w)
			fmt.Fprintf(os.Stderr, "  %-16s %3d pairs: wall med %.3f q1 %.3f min %.3f | cpu med %.3f q1 %.3f min %.3f\n",
				v.name, n, w[n/2], w[n/4], w[0], c[n/2], c[n/4], c[0])
		}
	}
}
