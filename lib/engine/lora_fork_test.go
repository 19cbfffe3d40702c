package engine

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
)

// TestLoRAForkMatchesAlone decodes eight sequences of three adapters and
// the base model (two rows each of two adapters, ranks 8 and 4, one
// adapter without an lm_head) in batches of all eight rows and of five,
// adapter products in two forks (loraProducts), and each sequence alone
// with the per-adapter products (addLoRA): every logit and cached key
// and value the same bits. Qwen3, Llama 3 with q, k and v biases (the
// adapter goes after them) and GPT-OSS (per-expert adapters), float32
// and bfloat16 weights, on one core and on two and three; on more than
// one, again with every stage forked (loraForkMinWork 0), as one fork of
// A- then B-products a pair (loraOneFork, which must run on two cores)
// and as two.
func TestLoRAForkMatchesAlone(t *testing.T) {
	defer func(f, d, o bool, w int) { loraFork, decodeFuse, loraOneFork, loraForkMinWork = f, d, o, w }(loraFork, decodeFuse, loraOneFork, loraForkMinWork)
	decodeFuse = false // one sequence alone takes the unfused path too
	type variant struct {
		name    string
		minWork int
		oneFork bool
	}
	minWork := loraForkMinWork
	for _, procs := range []int{1, 2, 3} {
		old := runtime.GOMAXPROCS(procs)
		variants := []variant{{"default", minWork, true}}
		if procs > 1 {
			variants = append(variants, variant{"one fork a pair", 0, true}, variant{"two forks", 0, false})
		}
		for _, arch := range []models.Family{models.Qwen3, models.Llama3, models.GptOss} {
			for _, dtype := range []string{"f32", "bf16"} {
				m, loras := loraForkModel(t, arch, dtype)
				loraFork = false
				var alone, aloneCaches [][]float32
				for s := range loras {
					l, c, _, _ := loraForkDecode(t, m, loras[s:s+1], s)
					alone, aloneCaches = append(alone, l[0]), append(aloneCaches, c[0])
				}
				for _, v := range variants {
					name := fmt.Sprintf("GOMAXPROCS=%d %s %s %s", procs, arch, dtype, v.name)
					loraFork, loraForkMinWork, loraOneFork = true, v.minWork, v.oneFork
					batched, caches, calls, fused := loraForkDecode(t, m, loras, 0)
					if calls == 0 {
						t.Fatalf("%s: the batched steps never ran loraProducts", name)
					}
					// on three cores the pairs are too uneven for one fork
					if v.minWork == 0 && (v.oneFork && procs == 2) != (fused > 0) {
						t.Fatalf("%s: %d calls as one fork of pairs", name, fused)
					}
					for s := range loras {
						fuseSameBits(t, fmt.Sprintf("%s sequence %d logits", name, s), alone[s], batched[s])
						fuseSameBits(t, fmt.Sprintf("%s sequence %d caches", name, s), aloneCaches[s], caches[s])
					}
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// loraForkModel is a 3-layer model of arch and the eight sequences'
// adapters: la (rank 8, with an lm_head), lb (rank 4, without), lc
// (rank 8) and base rows.
func loraForkModel(t *testing.T, arch models.Family, dtype string) (*Model, []*LoRA) {
	t.Helper()
	m, c := fuseTestModel(t, arch, dtype, "lora-fork-"+string(arch), 31, 6)
	lora := func(rank int, seed uint64, head bool) *LoRA {
		lts := randomLoRA(c, rank, seed, false)
		if !head {
			delete(lts, "base_model.model.lm_head.lora_A.weight")
			delete(lts, "base_model.model.lm_head.lora_B.weight")
		}
		l, err := NewLoRA(c, lts, rank, float64(2*rank), false)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	la, lb, lc := lora(8, 41, true), lora(4, 42, false), lora(8, 43, true)
	return m, []*LoRA{la, nil, lb, la, lc, lb, nil, la}
}

// loraForkDecode prefills a prompt of 4 + i positions for each sequence
// (i = first + its index; its adapter loras[s]) on its own, then decodes
// 6 steps of every sequence's row and 2 more of those with i < 5, and
// returns each sequence's decoding logits and cache, how many calls ran
// loraProducts and how many of them as one fork of pairs.
func loraForkDecode(t *testing.T, m *Model, loras []*LoRA, first int) (logits, caches [][]float32, calls, fused int) {
	t.Helper()
	ws := &workspace{}
	seqs := make([]*kvCache, len(loras))
	logits = make([][]float32, len(loras))
	for s := range seqs {
		i := first + s
		seqs[s] = m.newCache(16)
		var rows []row
		for p := range 4 + i {
			rows = append(rows, row{seq: seqs[s], token: (7*p + 3*i) % m.cfg.VocabSize, pos: p, lora: loras[s]})
		}
		m.forward(ws, rows)
	}
	for step := range 8 {
		var rows []row
		var idx []int
		for s, seq := range seqs {
			if i := first + s; step < 6 || i < 5 {
				rows = append(rows, row{seq: seq, token: (13*step + 5*i) % m.cfg.VocabSize, pos: seq.n, logits: true, lora: loras[s]})
				idx = append(idx, s)
			}
		}
		if len(rows) == 0 {
			continue
		}
		for k, l := range m.forward(ws, rows) {
			logits[idx[k]] = append(logits[idx[k]], l...)
		}
	}
	for _, seq := range seqs {
		var c []float32
		for l := range seq.k {
			c = append(c, seq.k[l][:seq.n*seq.kw]...)
			c = append(c, seq.v[l][:seq.n*seq.vw]...)
		}
		caches = append(caches, c)
	}
	return logits, caches, ws.lr.calls, ws.lr.fused
}

// TestLoRAPiecesCoverRows checks loraPieces: every row of every matrix
// in exactly one piece, in order, 16-row multiples but a matrix's last,
// none over the bound unless a single 16-row block is, and with no
// bound cutPieces' pieces.
func TestLoRAPiecesCoverRows(t *testing.T) {
	ms := []mat{{rows: 32, cols: 1024}, {rows: 151936, cols: 32}, {rows: 8, cols: 64}, {rows: 3072, cols: 32}, {rows: 48, cols: 40000}}
	for _, workers := range []int{1, 2, 3} {
		want := cutPieces(nil, ms, 16, workers, loraMinPiece)
		if got := loraPieces(nil, ms, workers, 0); !slices.Equal(got, want) {
			t.Fatalf("workers %d, no bound: %v, cutPieces %v", workers, got, want)
		}
		for _, maxPiece := range []int{1 << 19, 1 << 14, 100} {
			ps := loraPieces(nil, ms, workers, maxPiece)
			w, lo := 0, 0
			for _, p := range ps {
				if p.w != w {
					if p.w != w+1 || lo != ms[w].rows {
						t.Fatalf("workers %d, bound %d: piece %v after row %d of matrix %d", workers, maxPiece, p, lo, w)
					}
					w, lo = p.w, 0
				}
				m := ms[p.w]
				if p.lo != lo || p.hi <= p.lo || (p.hi-p.lo)%16 != 0 && p.hi != m.rows {
					t.Fatalf("workers %d, bound %d: piece %v after row %d", workers, maxPiece, p, lo)
				}
				if (p.hi-p.lo)*m.cols > maxPiece && p.hi-p.lo > 16 {
					t.Fatalf("workers %d, bound %d: piece %v has %d weights", workers, maxPiece, p, (p.hi-p.lo)*m.cols)
				}
				lo = p.hi
			}
			if w != len(ms)-1 || lo != ms[w].rows {
				t.Fatalf("workers %d, bound %d: pieces end at row %d of matrix %d", workers, maxPiece, lo, w)
			}
		}
	}
}
