package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const corpusSize = 5000

type refResult struct {
	IDs     []int  `json:"ids"`
	Special []int  `json:"special"`
	Decoded string `json:"decoded"`
}

// runReference encodes the corpus with transformers.js in one node process.
func runReference(t *testing.T, f family, corpus []string) []refResult {
	t.Helper()
	nm := nodeModules(t)
	path := filepath.Join(t.TempDir(), "corpus.json")
	data, err := json.Marshal(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(repoRoot(t), "lib", "tokenizer", "testdata", "reference.cjs")
	cmd := exec.Command("node", script, "encode", familyDir(t, f), path)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nm)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node reference for %s: %v\n%s", f.name, err, tail(stderr.String(), 2000))
	}
	var res []refResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	for sc.Scan() {
		var r refResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("parse reference output line %d: %v", len(res)+1, err)
		}
		res = append(res, r)
	}
	if len(res) != len(corpus) {
		t.Fatalf("reference returned %d results for %d strings", len(res), len(corpus))
	}
	return res
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// mismatch describes the first difference between two id sequences with the
// text around it.
func mismatch(tk *Tokenizer, text string, got, want []int) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-3)
	show := func(ids []int) string {
		hi := min(len(ids), i+4)
		var parts []string
		for _, id := range ids[lo:hi] {
			parts = append(parts, fmt.Sprintf("%d%q", id, tk.TokenBytes(id)))
		}
		return strings.Join(parts, " ")
	}
	ctx := text
	if len(ctx) > 300 {
		ctx = ctx[:300] + "…"
	}
	return fmt.Sprintf("text %q (%d bytes)\nfirst difference at token %d of %d/%d\n got: …%s\nwant: …%s",
		ctx, len(text), i, len(got), len(want), show(got), show(want))
}

// TestMatchesTransformersJS is the exactness bar: identical ids to
// transformers.js on a varied corpus per family, with and without special
// tokens, and decode(encode(s)) == s.
func TestMatchesTransformersJS(t *testing.T) {
	for _, f := range families {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel() // node for one family while Go checks another
			tk := loadFamily(t, f)
			corpus := buildCorpus(tk, corpusSize)
			ref := runReference(t, f, corpus)
			bad := 0
			for i, s := range corpus {
				got := tk.Encode(s, false)
				if !slices.Equal(got, ref[i].IDs) {
					bad++
					if bad <= 3 {
						t.Errorf("string %d: ids differ from transformers.js:\n%s", i, mismatch(tk, s, got, ref[i].IDs))
					}
					continue
				}
				want := ref[i].Special
				if want == nil {
					want = slices.Concat(tk.prefix, ref[i].IDs, tk.suffix)
				} else if f.name == "deepseek_v3" {
					// transformers.js ignores add_bos_token; Python transformers'
					// LlamaTokenizerFast (what the Tinker SDK uses) prepends BOS.
					want = append([]int{0}, want...)
				}
				if gs := tk.Encode(s, true); !slices.Equal(gs, want) {
					bad++
					if bad <= 3 {
						t.Errorf("string %d: ids with special tokens differ:\n%s", i, mismatch(tk, s, gs, want))
					}
				}
				if d := tk.Decode(got, false); d != tk.normalizeText(s) {
					bad++
					if bad <= 3 {
						t.Errorf("string %d: decode(encode(s)) != s: got %q want %q", i, trunc(d), trunc(s))
					}
				}
				if d := tk.Decode(got, false); d != ref[i].Decoded {
					bad++
					if bad <= 3 {
						t.Errorf("string %d: decode differs from transformers.js: got %q want %q", i, trunc(d), trunc(ref[i].Decoded))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d strings differ", f.name, bad, len(corpus))
			}
			t.Logf("%s: %d strings identical to transformers.js", f.name, len(corpus)-bad)
		})
	}
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
