package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchCorpus returns a ~10 MB mixed corpus (the exactness corpus generator
// run longer), one string per line.
func benchCorpus(tk *Tokenizer, size int) string {
	var b strings.Builder
	for _, s := range buildCorpus(tk, 60000) {
		if b.Len() >= size {
			break
		}
		b.WriteString(strings.ReplaceAll(s, "\n", " "))
		b.WriteByte('\n')
	}
	for b.Len() < size { // top up with prose if the generator ran short
		b.WriteString("The quick brown fox jumps over the lazy dog; naïve café, 中文文本, مرحبا بالعالم, नमस्ते दुनिया 👍\n")
	}
	return b.String()
}

// BenchmarkEncodeCorpus measures encode throughput per family. With
// TOKENIZER_BENCH_JS=1 it also runs transformers.js on the same corpus and
// prints both and the ratio (make bench-tokenizer).
func BenchmarkEncodeCorpus(b *testing.B) {
	for _, f := range families {
		if f.name == "llama3" {
			continue // same tokenizer as llama3_1
		}
		b.Run(f.name, func(b *testing.B) {
			tk := loadFamily(b, f)
			text := benchCorpus(tk, 10<<20)
			lines := strings.Split(text, "\n")
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			start := time.Now()
			tokens := 0
			buf := make([]int, 0, 1<<16)
			for i := 0; i < b.N; i++ {
				tokens = 0
				for _, l := range lines {
					buf = tk.AppendEncode(buf[:0], l, false)
					tokens += len(buf)
				}
			}
			secs := time.Since(start).Seconds() / float64(b.N)
			b.StopTimer()
			goMBps := float64(len(text)) / 1e6 / secs
			b.ReportMetric(float64(tokens), "tokens")
			if os.Getenv("TOKENIZER_BENCH_JS") == "" {
				return
			}
			js := runJSBench(b, f, text)
			fmt.Printf("encode %-12s %6.1f MB corpus: Go %7.2f MB/s  transformers.js %6.2f MB/s  ratio %.1fx  (%d tokens, js %d)\n",
				f.name, float64(len(text))/1e6, goMBps, js.MBps, goMBps/js.MBps, tokens, js.Tokens)
		})
	}
}

type jsBench struct {
	Tokens int     `json:"tokens"`
	MBps   float64 `json:"mbps"`
}

func runJSBench(b *testing.B, f family, text string) jsBench {
	path := filepath.Join(b.TempDir(), "corpus.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(repoRoot(b), "lib", "tokenizer", "testdata", "reference.cjs")
	cmd := exec.Command("node", script, "bench", familyDir(b, f), path)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules(b))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("node bench: %v", err)
	}
	var r jsBench
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("node bench output %q: %v", out, err)
	}
	return r
}

// prompt8K is roughly 8k tokens of mixed prose and code.
func prompt8K() string {
	var b strings.Builder
	for b.Len() < 34000 {
		b.WriteString("The quick brown fox jumps over the lazy dog. It's 12:30 and we're testing tokenizers!\n")
		b.WriteString("func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Println(i)\n\t}\n}\n")
		b.WriteString("Naïve café owners in São Paulo don't serve crème brûlée; 中文也可以。\n")
	}
	return b.String()
}

// BenchmarkEncode8K encodes an ~8k-token prompt (warm cache: the steady
// state of a process that samples repeatedly).
func BenchmarkEncode8K(b *testing.B) {
	for _, f := range []family{{"llama3_1"}, {"qwen3"}, {"deepseek_v3"}, {"gptoss"}} {
		b.Run(f.name, func(b *testing.B) {
			tk := loadFamily(b, f)
			text := prompt8K()
			n := len(tk.Encode(text, true))
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tk.Encode(text, true)
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

// BenchmarkPreTokenize compares the hand-written Split matchers with the
// same patterns run by regexp2.
func BenchmarkPreTokenize(b *testing.B) {
	for _, f := range []family{{"llama3_1"}, {"gptoss"}, {"deepseek_v3"}} {
		tk := loadFamily(b, f)
		tj, err := os.ReadFile(filepath.Join(familyDir(b, f), "tokenizer.json"))
		if err != nil {
			b.Fatal(err)
		}
		rx, err := FromFiles(tj, nil, withRegexp2())
		if err != nil {
			b.Fatal(err)
		}
		text := benchCorpus(tk, 1<<20)
		for _, v := range []struct {
			name string
			pre  preTokenizer
		}{{"handwritten", tk.pre}, {"regexp2", rx.pre}} {
			b.Run(f.name+"/"+v.name, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for i := 0; i < b.N; i++ {
					n := 0
					v.pre.split(text, func(string) { n++ })
				}
			})
		}
	}
}

// BenchmarkLoad parses tokenizer.json (what a fresh `tinker tokenize` pays).
func BenchmarkLoad(b *testing.B) {
	for _, f := range []family{{"llama3_1"}, {"gptoss"}} {
		data, err := os.ReadFile(filepath.Join(familyDir(b, f), "tokenizer.json"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				if _, err := FromFiles(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
