package engine

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tinkershell/tinker/lib/models"
)

// procPss is the process's proportional set size in bytes, from
// /proc/self/smaps_rollup: a page mapped by k mappings counted 1/k in
// each, so a memory file's page counts once however many rows map it.
func procPss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		t.Skip("no /proc/self/smaps_rollup")
	}
	_, rest, ok := bytes.Cut(b, []byte("\nPss:"))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("kB")))), 10, 64)
	if !ok || err != nil {
		t.Fatalf("no Pss line in smaps_rollup: %q", line)
	}
	return kb << 10
}

// leaderModel is a small model whose prompt caches are large (8 MiB of
// keys and values in float32 at 512 positions), on the bf16 compute
// path or the float32 one.
func leaderModel(t *testing.T, bf16 bool) *Model {
	t.Helper()
	c := Config{Shape: models.Shape{Family: models.Qwen3, VocabSize: 256, Hidden: 128, Intermediate: 192,
		Layers: 2, Heads: 8, KVHeads: 8, HeadDim: 128, RMSNormEps: 1e-6, RopeTheta: 10000,
		MaxPositionEmbeddings: 4096}, BOSTokenID: -1}
	ts := randomTensors(c, 11)
	if bf16 {
		needBF16(t)
		matricesToBF16(ts)
	}
	m, err := New(fmt.Sprintf("alias-leader-%v", bf16), c, ts)
	if err != nil {
		t.Fatal(err)
	}
	if bf16 {
		m.w.withBF16Compute()
	}
	return m
}

// TestKVAliasLeaderHeldOnce: while the samples of a 512-position prompt
// decode (8 MiB of keys and values in float32 on this shape, and on the
// bf16 compute path a bf16 copy of 4 MiB), the memory they add (PSS,
// measured at the leader's third token with the heap's free pages
// returned) is at least half of what the leader's own copy of the prompt
// holds less with the leader's cache mapped than with it a heap copy
// beside the memory file, and the bits are the same: a num_samples
// request (kvAliasLeader: the float32 cache and its bf16 copy), and a
// single request with three single followers arriving at its first
// token (kvAliasLeaderSingle: its float32 prompt pages; it decodes in
// its own bf16 copy).
func TestKVAliasLeaderHeldOnce(t *testing.T) {
	aliasAll(t)
	defer func(l, s bool) { kvAliasLeader, kvAliasLeaderSingle = l, s }(kvAliasLeader, kvAliasLeaderSingle)
	for _, bf16 := range []bool{false, true} {
		m := leaderModel(t, bf16)
		c := m.cfg
		const n = 512
		kw, vw := c.cacheWidths()
		prompt := int64(4 * n * (kw + vw) * c.Layers)
		bf16Copy := int64(0)
		if bf16 {
			bf16Copy = int64(2 * 2 * bf16Cols(n) * c.KVHeads * c.HeadDim * c.Layers)
		}
		p := spreadPrompt(m, n, 3, 2)
		group := SampleRequest{Prompt: p, MaxTokens: 4, Temperature: 1, Seed: seedp(71), NumSamples: 4}
		single := SampleRequest{Prompt: p, MaxTokens: 6, Temperature: 1, Seed: seedp(72)}
		var late []SampleRequest
		for i := range 3 {
			late = append(late, SampleRequest{Prompt: p, MaxTokens: 4, Temperature: 0.8, Seed: seedp(int64(73 + i))})
		}
		for _, k := range []struct {
			label string
			lead  SampleRequest
			late  []SampleRequest // arriving at the leader's first token
			on    *bool
			held  int64 // the leader's own copy the switch frees
		}{{"num_samples", group, nil, &kvAliasLeader, prompt + bf16Copy}, {"single leader", single, late, &kvAliasLeaderSingle, prompt}} {
			label := fmt.Sprintf("%s, bf16 %v", k.label, bf16)
			var added [2]int64
			var got [2][]*SampleResponse
			for i, on := range []bool{false, true} {
				*k.on = on
				m.kvPool().dropIdle(time.Now().Add(2 * kvPoolIdle))
				debug.FreeOSMemory()
				pss0 := procPss(t)
				got[i] = make([]*SampleResponse, 1+len(k.late))
				var wg sync.WaitGroup
				lead := k.lead
				lead.StopFunc = func(gen []int) bool {
					if len(gen) == 1 && len(k.late) > 0 {
						for j, r := range k.late {
							wg.Go(func() { got[i][1+j] = sample(t, m, r) })
						}
						waitQueued(t, m.batch, len(k.late))
					}
					// Every sample has started (the late ones in the step
					// after they queued).
					if len(gen) == 3 && added[i] == 0 {
						debug.FreeOSMemory()
						added[i] = procPss(t) - pss0
					}
					return false
				}
				got[i][0] = sample(t, m, lead)
				wg.Wait()
				waitReleased(t, m, fmt.Sprintf("%s, switch %v", label, on))
			}
			sameAsSolo(t, label+": the leader's cache mapped against its copy", got[0], got[1])
			t.Logf("%s: the leader's copy %.1f MiB; the samples added %.1f MiB with it, %.1f without", label,
				float64(k.held)/(1<<20), float64(added[0])/(1<<20), float64(added[1])/(1<<20))
			if added[0]-added[1] < k.held/2 { // the heap moves by 1-2 MiB between runs
				t.Errorf("%s: the samples added %d kB with the leader's copy and %d kB with its cache mapped: the prompt (%d kB) is held twice",
					label, added[0]>>10, added[1]>>10, k.held>>10)
			}
		}
	}
}
