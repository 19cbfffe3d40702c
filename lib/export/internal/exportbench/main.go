// Command exportbench measures lib/export's merge against a plain copy of
// the same base shards, in one run: a Llama-shaped bfloat16 model of about
// 1 GB in four shards (or, with -model deepseek, a DeepSeek-shaped
// mixture-of-experts model in FP8 blocks, deepseek.go) and a rank-32
// adapter on every matrix (unembedding included) are generated in a
// temporary directory; then, alternately, a
// child process copies the shards (read, write, fsync) and a child process
// exports the merged model (which also fsyncs). Throughput is base bytes
// per second; peak RSS is the child's, against the largest shard plus the
// adapter. make bench-export runs it.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/tinkershell/tinker/lib/export"
	"github.com/tinkershell/tinker/lib/safetensors"
)

func main() {
	child := flag.String("child", "", "internal: run one measured step (copy or merge)")
	base := flag.String("base", "", "internal: base directory")
	adapter := flag.String("adapter", "", "internal: adapter directory")
	out := flag.String("out", "", "internal: output directory")
	runs := flag.Int("runs", 2, "measured runs of each")
	keep := flag.String("dir", "", "generate the model here and keep it (default: a temporary directory)")
	model := flag.String("model", "llama", "llama (dense bfloat16, ~1 GB), deepseek (MoE, FP8 blocks, ~2.6 GB), kimi (MoE, INT4 experts, ~1.7 GB, kimi.go) or gptoss (MoE, MXFP4 experts, ~1.9 GB, gptoss.go)")
	profile := flag.String("cpuprofile", "", "with -child merge: write its CPU profile here (for go tool pprof)")
	flag.StringVar(&other, "other", "", "another build of exportbench (e.g. main's) whose merge runs beside this one's, interleaved: an A/B under load")
	flag.Parse()
	if *child != "" {
		if err := runProfiled(*profile, func() error { return runChild(*child, *base, *adapter, *out) }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(peakRSS())
		fmt.Println(schedStat())
		return
	}
	if err := bench(*runs, *keep, *model); err != nil {
		fmt.Fprintln(os.Stderr, "exportbench:", err)
		os.Exit(1)
	}
}

func runChild(step, base, adapter, out string) error {
	if step == "copy" {
		return copyShards(base, out)
	}
	_, err := export.Export(context.Background(), export.Options{Adapter: adapter, Base: base, Out: out})
	return err
}

// runProfiled runs f, under the CPU profiler when path is set.
func runProfiled(path string, f func() error) error {
	if path == "" {
		return f()
	}
	pf, err := os.Create(path)
	if err != nil {
		return err
	}
	defer pf.Close()
	if err := pprof.StartCPUProfile(pf); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	return f()
}

// copyShards is the reference: each shard read and written as is, synced.
func copyShards(base, out string) error {
	if err := os.Mkdir(out, 0o755); err != nil {
		return err
	}
	shards, _ := filepath.Glob(filepath.Join(base, "*.safetensors"))
	for _, s := range shards {
		if err := copyFile(s, filepath.Join(out, filepath.Base(s))); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	if err := o.Sync(); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// peakRSS is this process's VmHWM line from /proc/self/status: its own
// peak since exec. (A child's rusage maxrss also counts the parent's peak,
// whose memory the child shares from fork until exec.)
func peakRSS() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	return ""
}

// schedStat sums this process's threads' time on a CPU and time runnable
// but waiting for one (/proc/self/task/*/schedstat, nanoseconds).
func schedStat() string {
	paths, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var run, wait int64
	for _, p := range paths {
		var r, w int64
		if b, err := os.ReadFile(p); err == nil {
			fmt.Sscan(string(b), &r, &w)
		}
		run, wait = run+r, wait+w
	}
	return fmt.Sprintf("sched: %d %d", run, wait)
}

// other is -other: the build whose merge is measured beside this one's.
var other string

type result struct {
	secs, cpu float64 // wall and CPU (user + system) seconds
	rssKB     int64
	// runnable is the child's threads' time running or waiting to run
	// over wall time: how many threads had work on average. Other load
	// stretches both, so unlike CPU/wall it survives a busy machine;
	// on an idle one of n cores, parallelism is about min(n, runnable).
	runnable float64
}

func measure(step, base, adapter, out string) (result, error) {
	os.RemoveAll(out)
	defer os.RemoveAll(out)
	bin := os.Args[0]
	if step == "other" {
		bin, step = other, "merge"
	}
	cmd := exec.Command(bin, "-child", step, "-base", base, "-adapter", adapter, "-out", out)
	var stdout strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s: %w", step, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	secs := time.Since(start).Seconds()
	var hwm, run, wait int64
	if _, err := fmt.Sscanf(stdout.String(), "VmHWM: %d kB\nsched: %d %d", &hwm, &run, &wait); err != nil {
		hwm = ru.Maxrss // no /proc: the rusage figure, which counts ours too
	}
	return result{secs, cpu, hwm, float64(run+wait) / 1e9 / secs}, nil
}

func bench(runs int, dir, model string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "exportbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	base, adapter := filepath.Join(dir, "base"), filepath.Join(dir, "adapter")
	writeB, writeA, n := writeBase, writeAdapter, shards
	switch model {
	case "deepseek":
		writeB, writeA, n = writeDeepSeekBase, writeDeepSeekAdapter, dsShards
	case "kimi":
		writeB, writeA, n = writeKimiBase, writeDeepSeekAdapter, dsShards
	case "gptoss":
		writeB, writeA, n = writeGptOssBase, writeGptOssAdapter, gLayers
	case "llama":
	default:
		return fmt.Errorf("unknown -model %q: use llama, deepseek, kimi or gptoss", model)
	}
	total, largest, err := writeB(base)
	if err != nil {
		return err
	}
	adapterBytes, err := writeA(adapter)
	if err != nil {
		return err
	}
	fmt.Printf("%s base: %d shards, %.0f MB (largest shard %.0f MB); adapter rank %d, %.0f MB\n",
		model, n, mb(total), mb(largest), rank, mb(adapterBytes))
	steps := []string{"copy", "merge"}
	if other != "" {
		steps = append(steps, "other")
	}
	best := map[string]result{}
	for range runs {
		for _, step := range steps {
			r, err := measure(step, base, adapter, filepath.Join(dir, "out"))
			if err != nil {
				return err
			}
			fmt.Printf("  %-5s %6.2f s (CPU %5.2f s)  %7.0f MB/s  peak RSS %5.0f MB  runnable %.2f\n",
				step, r.secs, r.cpu, mb(total)/r.secs, float64(r.rssKB)/1024, r.runnable)
			if b, ok := best[step]; !ok || r.secs < b.secs {
				r.rssKB = max(r.rssKB, b.rssKB)
				best[step] = r
			}
		}
	}
	summary(best, total, largest+adapterBytes)
	return nil
}

// summary prints the best runs' figures against the goals (and against
// -other's merge, if it ran).
func summary(best map[string]result, total, bound int64) {
	c, m := best["copy"], best["merge"]
	fmt.Printf("merge throughput %.0f MB/s vs copy %.0f MB/s: %.2fx (goal >= 0.5x)\n", mb(total)/m.secs, mb(total)/c.secs, c.secs/m.secs)
	fmt.Printf("CPU seconds (load-independent): merge %.2f s, copy %.2f s, on %d cores\n", m.cpu, c.cpu, runtime.NumCPU())
	fmt.Printf("merge parallelism %.2f (CPU s / wall s; on an idle machine, the cores kept busy)\n", m.cpu/m.secs)
	fmt.Printf("merge threads runnable %.2f on average (running or waiting for a core, over wall: survives load)\n", m.runnable)
	fmt.Printf("merge peak RSS %.0f MB = %.2fx (largest shard + adapter = %.0f MB; goal < 2x)\n",
		float64(m.rssKB)/1024, float64(m.rssKB)*1024/float64(bound), mb(bound))
	if o, ok := best["other"]; ok {
		fmt.Printf("this build / -other: CPU s %.2fx, runnable %.2fx, wall %.2fx (best runs)\n", m.cpu/o.cpu, m.runnable/o.runnable, m.secs/o.secs)
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// The model: Llama-shaped, bfloat16, untied.
const (
	hidden, inter, layers, heads, kvHeads, headDim, vocab = 2048, 5632, 8, 16, 4, 128, 32000
	shards, rank                                          = 4, 32
)

type tensorSpec struct {
	name       string
	rows, cols int
}

func modelTensors() []tensorSpec {
	ts := []tensorSpec{{"model.embed_tokens.weight", vocab, hidden}, {"model.norm.weight", 1, hidden}, {"lm_head.weight", vocab, hidden}}
	for i := range layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		ts = append(ts, tensorSpec{p + "input_layernorm.weight", 1, hidden}, tensorSpec{p + "post_attention_layernorm.weight", 1, hidden})
		for _, m := range modules(i) {
			ts = append(ts, tensorSpec{m.name + ".weight", m.rows, m.cols})
		}
	}
	return ts
}

// modules lists layer i's linear maps (name without .weight, [out, in]).
func modules(i int) []tensorSpec {
	p := fmt.Sprintf("model.layers.%d.", i)
	q, kv := heads*headDim, kvHeads*headDim
	return []tensorSpec{{p + "self_attn.q_proj", q, hidden}, {p + "self_attn.k_proj", kv, hidden}, {p + "self_attn.v_proj", kv, hidden},
		{p + "self_attn.o_proj", hidden, q}, {p + "mlp.gate_proj", inter, hidden}, {p + "mlp.up_proj", inter, hidden}, {p + "mlp.down_proj", hidden, inter}}
}

// writeBase writes config.json, the shards and their index.
func writeBase(dir string) (total, largest int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	cfg := map[string]any{"model_type": "llama", "architectures": []string{"LlamaForCausalLM"}, "vocab_size": vocab,
		"hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
		"num_key_value_heads": kvHeads, "head_dim": headDim, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
		"tie_word_embeddings": false, "max_position_embeddings": 8192, "hidden_act": "silu", "torch_dtype": "bfloat16"}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return 0, 0, err
	}
	ts := bf16Infos(modelTensors())
	part := func(k int) []safetensors.TensorInfo { return ts[len(ts)*k/shards : len(ts)*(k+1)/shards] }
	return writeShardsOf(dir, shards, part, writeTyped, rand.New(rand.NewPCG(1, 2)))
}

// bf16Infos describes ts as bfloat16 tensors (a row count of 1: a vector).
func bf16Infos(ts []tensorSpec) []safetensors.TensorInfo {
	infos := make([]safetensors.TensorInfo, 0, len(ts))
	for _, t := range ts {
		shape := []int64{int64(t.rows), int64(t.cols)}
		if t.rows == 1 {
			shape = shape[1:]
		}
		infos = append(infos, safetensors.TensorInfo{Name: t.name, DType: safetensors.BF16, Shape: shape})
	}
	return infos
}

func randomBF16(w io.Writer, n int64, scale float64, r *rand.Rand, buf []byte) error {
	for n > 0 {
		c := min(n, int64(len(buf)))
		for i := int64(0); i < c; i += 2 {
			binary.LittleEndian.PutUint16(buf[i:], safetensors.Float32ToBF16(float32((2*r.Float64()-1)*scale)))
		}
		if _, err := w.Write(buf[:c]); err != nil {
			return err
		}
		n -= c
	}
	return nil
}

// writeAdapter writes a rank-32 float32 adapter on every matrix.
func writeAdapter(dir string) (int64, error) {
	mods := []tensorSpec{{"lm_head", vocab, hidden}}
	for i := range layers {
		mods = append(mods, modules(i)...)
	}
	return writePairs(dir, map[string]any{"r": rank, "lora_alpha": 32, "peft_type": "LORA"}, mods, rand.New(rand.NewPCG(3, 4)))
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
