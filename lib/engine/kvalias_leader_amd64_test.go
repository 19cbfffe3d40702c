package engine

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
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

// TestKVAliasLeaderHeldOnce: while a num_samples request decodes from a
// 512-position prompt (8 MiB of keys and values in float32 on this
// shape, and on the bf16 compute path a bf16 copy of 4 MiB), the memory
// the request adds (PSS, measured at its samples' second token with the
// heap's free pages returned) is at least 3/4 of the prompt's float32
// cache (and bf16 copy) less with kvAliasLeader than with the prompt
// cache a heap copy beside the memory file; both give the same bits.
func TestKVAliasLeaderHeldOnce(t *testing.T) {
	aliasAll(t)
	defer func(l bool) { kvAliasLeader = l }(kvAliasLeader)
	for _, bf16 := range []bool{false, true} {
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
		const n = 512
		kw, vw := c.cacheWidths()
		prompt := int64(4 * n * (kw + vw) * c.Layers)
		if bf16 {
			prompt += int64(2 * 2 * bf16Cols(n) * c.KVHeads * c.HeadDim * c.Layers)
		}
		req := SampleRequest{Prompt: spreadPrompt(m, n, 3, 2), MaxTokens: 4, Temperature: 1, Seed: seedp(71), NumSamples: 4}
		var added [2]int64
		var got [2]*SampleResponse
		for i, leader := range []bool{false, true} {
			kvAliasLeader = leader
			m.kvPool().dropIdle(time.Now().Add(2 * kvPoolIdle))
			debug.FreeOSMemory()
			pss0 := procPss(t)
			r := req
			r.StopFunc = func(gen []int) bool {
				if len(gen) == 2 && added[i] == 0 {
					debug.FreeOSMemory()
					added[i] = procPss(t) - pss0
				}
				return false
			}
			got[i] = sample(t, m, r)
			waitReleased(t, m, fmt.Sprintf("bf16 %v, leader %v", bf16, leader))
		}
		if d := sameResponse(got[0], got[1]); d != "" {
			t.Errorf("bf16 %v: the prompt cache mapped gives other bits than its copy: %s", bf16, d)
		}
		t.Logf("bf16 %v: prompt %.1f MiB; the request added %.1f MiB with the copy, %.1f mapped", bf16,
			float64(prompt)/(1<<20), float64(added[0])/(1<<20), float64(added[1])/(1<<20))
		if added[0]-added[1] < prompt*3/4 {
			t.Errorf("bf16 %v: the request added %d kB with the prompt cache a copy and %d kB with it mapped: the prompt (%d kB) is held twice",
				bf16, added[0]>>10, added[1]>>10, prompt>>10)
		}
	}
}
