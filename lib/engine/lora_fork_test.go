package engine

import (
	"fmt"
	"runtime"
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
// one again with every stage forked (loraForkMinWork 0: at its value
// these small models' stages run on the calling core).
func TestLoRAForkMatchesAlone(t *testing.T) {
	defer func(f, d bool, w int) { loraFork, decodeFuse, loraForkMinWork = f, d, w }(loraFork, decodeFuse, loraForkMinWork)
	decodeFuse = false // one sequence alone takes the unfused path too
	type variant struct {
		name    string
		minWork int
	}
	minWork := loraForkMinWork
	for _, procs := range []int{1, 2, 3} {
		old := runtime.GOMAXPROCS(procs)
		variants := []variant{{"default", minWork}}
		if procs > 1 {
			variants = append(variants, variant{"every stage forked", 0})
		}
		for _, arch := range []models.Family{models.Qwen3, models.Llama3, models.GptOss} {
			for _, dtype := range []string{"f32", "bf16"} {
				m, loras := loraForkModel(t, arch, dtype)
				loraFork = false
				var alone, aloneCaches [][]float32
				for s := range loras {
					l, c, _ := loraForkDecode(t, m, loras[s:s+1], s)
					alone, aloneCaches = append(alone, l[0]), append(aloneCaches, c[0])
				}
				for _, v := range variants {
					name := fmt.Sprintf("GOMAXPROCS=%d %s %s %s", procs, arch, dtype, v.name)
					loraFork, loraForkMinWork = true, v.minWork
					batched, caches, calls := loraForkDecode(t, m, loras, 0)
					if calls == 0 {
						t.Fatalf("%s: the batched steps never ran loraProducts", name)
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
// returns each sequence's decoding logits and cache and how many calls
// ran loraProducts.
func loraForkDecode(t *testing.T, m *Model, loras []*LoRA, first int) (logits, caches [][]float32, calls int) {
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
	return logits, caches, ws.lr.calls
}
