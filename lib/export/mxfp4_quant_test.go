package export

import (
	"bytes"
	"context"
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// refMXFP4 quantises one block of 32 values from the format's definition,
// in float64: the values rounded to bfloat16, the scale the least power of
// two with largest magnitude / scale <= 6, each value the nearest of
// ±{0, 0.5, 1, 1.5, 2, 3, 4, 6} times it (a tie to the larger magnitude).
// It returns the quantised values and the scale's exponent.
func refMXFP4(v []float32) ([]float64, int) {
	mags := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	var amax float64
	x := make([]float64, len(v))
	for i, f := range v {
		x[i] = float64(safetensors.BF16ToFloat32(safetensors.Float32ToBF16(f)))
		amax = max(amax, math.Abs(x[i]))
	}
	if amax == 0 {
		return x, -127
	}
	e := math.Ceil(math.Log2(amax / 6))
	for math.Pow(2, e-1) >= amax/6 { // the float log may land a step high
		e--
	}
	for i, xi := range x {
		q, best := math.Abs(xi)/math.Pow(2, e), 0
		for k, m := range mags {
			if math.Abs(q-m) <= math.Abs(q-mags[best]) {
				best = k
			}
		}
		x[i] = math.Copysign(mags[best], xi) * math.Pow(2, e)
	}
	return x, int(e)
}

// quant.MXFP4Encode encodes blocks as refMXFP4 quantises them, ties included.
func TestMXFP4BlockMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 3000 {
		v := make([]float32, 32)
		for i := range v {
			v[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(20)-10)))
		}
		if n%3 == 0 { // ties: values on the half steps of a power-of-two scale
			for i := range v {
				v[i] = float32(float64(r.IntN(25)-12) * 0.25 * math.Pow(2, float64(n%7-3)))
			}
		}
		var out [16]byte
		sc := quant.MXFP4Encode(v, out[:])
		want, e := refMXFP4(v)
		if int(sc) != e+127 {
			t.Fatalf("block %d: scale byte %d, want %d", n, sc, e+127)
		}
		got := make([]float32, 32)
		quant.MXFP4Decode(out[:], []byte{sc}, got)
		for i := range got {
			if float64(got[i]) != want[i] {
				t.Fatalf("block %d value %d: %g encodes as %g, want %g", n, i, v[i], got[i], want[i])
			}
		}
	}
}

// By default an adapted MXFP4 base merges back into MXFP4 as released
// (blocks and scales, quantization_config kept): every block is refMXFP4
// of the float32 merge's values, or the base's bytes where those values
// are the base's, and through the engine it gives the logprobs of that
// reference model written dense. A zero update leaves every expert's
// bytes as they were.
func TestMXFP4Requantised(t *testing.T) {
	ad, mx := gptOssAdapter(t), gptOssBaseOf(t, true)
	qout, fout := filepath.Join(t.TempDir(), "q"), filepath.Join(t.TempDir(), "f")
	for _, o := range []Options{{Adapter: ad, Base: mx, Out: qout}, {Adapter: ad, Base: mx, Out: fout, DType: "float32"}} {
		if _, err := Export(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	if cfg, _ := os.ReadFile(filepath.Join(qout, "config.json")); !strings.Contains(string(cfg), `"mxfp4"`) {
		t.Errorf("requantised config.json lost its quantization_config:\n%s", cfg)
	}
	base, q, f := readAll(t, mx), readAll(t, qout), readAll(t, fout)
	for name, x := range base {
		if y, ok := q[name]; !ok || y.DType != x.DType || !slices.Equal(y.Shape, x.Shape) {
			t.Errorf("%s: base %s %v, requantised %v", name, x.DType, x.Shape, y)
		}
	}
	changed := 0
	for name, x := range base {
		if w, ok := strings.CutSuffix(name, "_blocks"); ok {
			changed += checkRequantised(t, w, x, base[w+"_scales"], q, f)
		}
	}
	if changed == 0 {
		t.Fatal("no block changed: the test proves nothing")
	}
	ref := filepath.Join(t.TempDir(), "ref")
	writeModelDir(t, fout, ref, f)
	want, got := servedLogprobs(t, ref), servedLogprobs(t, qout)
	t.Logf("%d blocks requantised; logprobs: requantised vs reference %g, vs the float32 merge %g",
		changed, maxDiff(want, got), maxDiff(got, servedLogprobs(t, fout)))
	if d := maxDiff(want, got); d > 1e-4 {
		t.Errorf("requantised logprobs differ from the reference quantisation's by %g", d)
	}

	zero := trainedAdapter(t, models.TinyGptOss, engine.LoRAConfig{Rank: 3, Alpha: 8, Seed: 6}, 7, 0)
	zout := filepath.Join(t.TempDir(), "z")
	if _, err := Export(context.Background(), Options{Adapter: zero, Base: mx, Out: zout}); err != nil {
		t.Fatal(err)
	}
	for name, y := range readAll(t, zout) {
		if strings.HasSuffix(name, "_blocks") || strings.HasSuffix(name, "_scales") {
			if !bytes.Equal(y.Data, base[name].Data) {
				t.Errorf("%s: a zero update changed its bytes", name)
			}
		}
	}
}

// checkRequantised compares weight w's requantised blocks in q with the
// float32 merge in f (dense [E, in, out]) block by block, replaces f's
// values by the reference's, and counts the blocks that changed.
func checkRequantised(t *testing.T, w string, blocks, scales safetensors.Tensor, q, f map[string]safetensors.Tensor) int {
	E, O, I := int(blocks.Shape[0]), int(blocks.Shape[1]), int(blocks.Shape[2])*32
	was, got := make([]float32, E*O*I), make([]float32, E*O*I)
	quant.MXFP4Decode(blocks.Data, scales.Data, was)
	quant.MXFP4Decode(q[w+"_blocks"].Data, q[w+"_scales"].Data, got)
	ft := f[w]
	dense, err := ft.Float32()
	if err != nil {
		t.Fatal(err)
	}
	changed, x := 0, make([]float32, 32)
	for b := range E * O * I / 32 {
		e, o, i0 := b/(O*I/32), b%(O*I/32)/(I/32), b%(I/32)*32
		for k := range x {
			x[k] = dense[(e*I+i0+k)*O+o]
		}
		want := make([]float64, 32)
		if equal32(x, was[32*b:32*b+32]) {
			for k, v := range x {
				want[k] = float64(v)
			}
		} else {
			want, _ = refMXFP4(x)
			changed++
		}
		for k := range x {
			if float64(got[32*b+k]) != want[k] {
				t.Fatalf("%s expert %d output %d input %d: requantised %g, reference %g (merged %g)", w, e, o, i0+k, got[32*b+k], want[k], x[k])
			}
			dense[(e*I+i0+k)*O+o] = float32(want[k])
		}
	}
	f[w] = safetensors.Tensor{Name: w, DType: safetensors.F32, Shape: f[w].Shape, Data: float32Bytes(dense)}
	return changed
}

// writeModelDir writes tensors ts as one shard beside src's config.json
// and tokenizer.json.
func writeModelDir(t *testing.T, src, dir string, ts map[string]safetensors.Tensor) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, b)
	}
	var out []safetensors.Tensor
	for _, name := range slices.Sorted(maps.Keys(ts)) {
		out = append(out, ts[name])
	}
	fh, err := os.Create(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := safetensors.Write(fh, out, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
}

func float32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// readAll reads every tensor of a model directory's shards.
func readAll(t *testing.T, dir string) map[string]safetensors.Tensor {
	t.Helper()
	all := map[string]safetensors.Tensor{}
	shards, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	for _, s := range shards {
		f, err := safetensors.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range f.Tensors {
			all[x.Name] = x
		}
	}
	return all
}

// Through the engine the requantised merge stays as close to the float32
// merge as 4-bit rounding allows on this model: no further than twice
// what quantising the unquantised base to MXFP4 moves its own logprobs.
// The base is tiny-gpt-oss's own weights quantised (natural scales).
func TestMXFP4RequantisedCloseToFloat32(t *testing.T) {
	dense := gptOssBase(t)
	mx := mxfp4Of(t, dense)
	ad := gptOssAdapter(t)
	qout, fout := filepath.Join(t.TempDir(), "q"), filepath.Join(t.TempDir(), "f")
	for _, o := range []Options{{Adapter: ad, Base: mx, Out: qout}, {Adapter: ad, Base: mx, Out: fout, DType: "float32"}} {
		if _, err := Export(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	allows := maxDiff(servedLogprobs(t, dense), servedLogprobs(t, mx))
	d, effect := maxDiff(servedLogprobs(t, qout), servedLogprobs(t, fout)), maxDiff(servedLogprobs(t, mx), servedLogprobs(t, fout))
	t.Logf("requantised vs float32 merge %g; quantising the base moved it %g; the update moves it %g", d, allows, effect)
	if d > 2*allows {
		t.Errorf("requantised logprobs differ from the float32 merge's by %g, over twice the base's own quantisation (%g)", d, allows)
	}
}

// mxfp4Of writes dir's GPT-OSS model with its experts quantised to MXFP4
// (by quant.MXFP4Encode, pinned by TestMXFP4BlockMatchesReference) as released.
func mxfp4Of(t *testing.T, dir string) string {
	t.Helper()
	ts := readAll(t, dir)
	for name, x := range ts {
		if !strings.HasSuffix(name, "_proj") || !strings.Contains(name, ".experts.") {
			continue
		}
		v, err := x.Float32()
		if err != nil {
			t.Fatal(err)
		}
		E, I, O := int(x.Shape[0]), int(x.Shape[1]), int(x.Shape[2]) // stored [E, out, in/32, 16]
		blocks, scales, blk := make([]byte, E*O*I/2), make([]byte, E*O*I/32), make([]float32, 32)
		for b := range scales {
			e, o, i0 := b/(O*I/32), b%(O*I/32)/(I/32), b%(I/32)*32
			for k := range blk {
				blk[k] = v[(e*I+i0+k)*O+o]
			}
			scales[b] = quant.MXFP4Encode(blk, blocks[16*b:16*b+16])
		}
		delete(ts, name)
		ts[name+"_blocks"] = safetensors.Tensor{Name: name + "_blocks", DType: safetensors.U8, Shape: []int64{int64(E), int64(O), int64(I / 32), 16}, Data: blocks}
		ts[name+"_scales"] = safetensors.Tensor{Name: name + "_scales", DType: safetensors.U8, Shape: []int64{int64(E), int64(O), int64(I / 32)}, Data: scales}
	}
	out := filepath.Join(t.TempDir(), "mxfp4")
	writeModelDir(t, dir, out, ts)
	cfg, _ := os.ReadFile(filepath.Join(out, "config.json"))
	writeFile(t, out, "config.json", []byte(strings.Replace(string(cfg), "{", `{"quantization_config": {"quant_method": "mxfp4"},`, 1)))
	return out
}

func equal32(a, b []float32) bool {
	for i, x := range a {
		if x != b[i] {
			return false
		}
	}
	return true
}
