package engine

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
)

// Blocks that leave partial blocks at the edges of tiny-deepseek's
// matrices (40×64 → 3×3 blocks of which the last row and column are
// partial), and INT4 groups of 16.
var (
	qtBlock = [2]int{16, 24}
	qtGroup = 16
)

// qtE4M3 decodes an E4M3 code from the format's definition.
func qtE4M3(c byte) float64 {
	e, m := int(c>>3)&15, float64(c&7)
	v := math.Ldexp(1+m/8, e-7)
	if e == 0 {
		v = math.Ldexp(m/8, -6)
	}
	if c&0x80 != 0 {
		v = -v
	}
	return v
}

// qtFP8 quantises x (rows×cols) with the shared encoder, as a released
// checkpoint stores it, and returns the stored tensors and the values
// they hold, decoded independently in float64 (exact: a 4-bit mantissa
// times a float32 scale) and rounded once to float32.
func qtFP8(name string, x Tensor) ([]safetensors.Tensor, []float32) {
	rows, cols := x.Shape[0], x.Shape[1]
	nbr, nbc := (rows+qtBlock[0]-1)/qtBlock[0], (cols+qtBlock[1]-1)/qtBlock[1]
	codes, scales := make([]byte, rows*cols), make([]byte, 4*nbr*nbc)
	quant.FP8Quantize(x.Data, cols, qtBlock, 0, rows, codes, scales)
	ref := make([]float32, rows*cols)
	for i, c := range codes {
		s := math.Float32frombits(binary.LittleEndian.Uint32(scales[4*((i/cols/qtBlock[0])*nbc+(i%cols)/qtBlock[1]):]))
		ref[i] = float32(qtE4M3(c) * float64(s))
	}
	return []safetensors.Tensor{{Name: name, DType: safetensors.F8E4M3, Shape: []int64{int64(rows), int64(cols)}, Data: codes},
		{Name: name + "_scale_inv", DType: safetensors.F32, Shape: []int64{int64(nbr), int64(nbc)}, Data: scales}}, ref
}

// qtInt4 is qtFP8 for compressed-tensors' packed INT4.
func qtInt4(name string, x Tensor) ([]safetensors.Tensor, []float32) {
	rows, cols := x.Shape[0], x.Shape[1]
	packed, scales := make([]byte, rows*cols/2), make([]byte, 2*rows*cols/qtGroup)
	for r := range rows {
		quant.Int4Quantize(x.Data[r*cols:(r+1)*cols], qtGroup, packed[r*cols/2:], scales[2*r*cols/qtGroup:])
	}
	ref := make([]float32, rows*cols)
	for i := range ref {
		q := int(packed[i/2]>>(4*(i%2))) & 15
		if q >= 8 {
			q -= 16
		}
		s := safetensors.BF16ToFloat32(binary.LittleEndian.Uint16(scales[2*(i/qtGroup):]))
		ref[i] = float32(float64(q) * float64(s))
	}
	shape := make([]byte, 8)
	binary.LittleEndian.PutUint32(shape, uint32(rows))
	binary.LittleEndian.PutUint32(shape[4:], uint32(cols))
	return []safetensors.Tensor{{Name: name + "_packed", DType: safetensors.I32, Shape: []int64{int64(rows), int64(cols / 8)}, Data: packed},
		{Name: name + "_scale", DType: safetensors.BF16, Shape: []int64{int64(rows), int64(cols / qtGroup)}, Data: scales},
		{Name: name + "_shape", DType: safetensors.I32, Shape: []int64{2}, Data: shape}}, ref
}

// qtDirs writes tiny-deepseek twice: quantised as DeepSeek V3.1 (every
// linear map FP8) or Kimi K2.6 (routed experts INT4), over two shards so
// that weights and their scales fall apart, and as float32 holding the
// dequantised values (rounded to bfloat16 when round, as BF16Keep keeps
// them). mutate may spoil the quantised tensors.
func qtDirs(t *testing.T, kimi, round bool, mutate func([]safetensors.Tensor)) (qdir, fdir string, c Config) {
	c, ts, err := TinyTensors(models.TinyDeepSeek)
	if err != nil {
		t.Fatal(err)
	}
	qcfg := map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": qtBlock[:]}
	if kimi {
		qcfg = map[string]any{"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": map[string]any{
			"group_0": map[string]any{"weights": map[string]any{"num_bits": 4, "group_size": qtGroup, "symmetric": true, "type": "int"}}}}
	}
	var stored []safetensors.Tensor
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range ts {
			if !yield(n) {
				return
			}
		}
	}) {
		x := ts[n]
		var parts []safetensors.Tensor
		switch {
		case kimi && strings.Contains(n, ".mlp.experts."):
			parts, x.Data = qtInt4(n, x)
		case !kimi && len(x.Shape) == 2 && (strings.HasSuffix(n, "_proj.weight") || strings.HasSuffix(n, "_mqa.weight")):
			parts, x.Data = qtFP8(n, x)
		default:
			parts = []safetensors.Tensor{f32Tensor(n, x)}
		}
		if round && len(parts) > 1 {
			for i, v := range x.Data {
				x.Data[i] = safetensors.BF16ToFloat32(safetensors.Float32ToBF16(v))
			}
		}
		ts[n] = x
		stored = append(stored, parts...)
	}
	if mutate != nil {
		mutate(stored)
	}
	fdir, qdir = t.TempDir(), t.TempDir()
	writeHFDir(t, fdir, c, ts, safetensors.F32, 1)
	qtWrite(t, qdir, c, kimi, qcfg, stored)
	return qdir, fdir, c
}

// qtWrite writes config.json (with quantization_config) and the stored
// tensors alternately over two shards with an index.
func qtWrite(t *testing.T, dir string, c Config, kimi bool, qcfg map[string]any, stored []safetensors.Tensor) {
	cfg, err := c.HFConfigJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		t.Fatal(err)
	}
	m["quantization_config"] = qcfg
	if kimi {
		m["model_type"] = "kimi_k2"
	}
	cfg, _ = json.Marshal(m)
	shards := make([][]safetensors.Tensor, 2)
	for i, x := range stored {
		shards[i%2] = append(shards[i%2], x)
	}
	if err := safetensors.WriteDir(dir, shards); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A DeepSeek V3.1 directory with FP8 block weights and a Kimi K2 one with
// INT4 packed experts load to exactly the model their dequantised float32
// weights make: the same logprob bits, in float32 and, kept in bfloat16,
// those of the dequantised weights rounded to bfloat16.
func TestLoadDirQuantised(t *testing.T) {
	for _, kimi := range []bool{false, true} {
		t.Run(map[bool]string{false: "fp8", true: "int4"}[kimi], func(t *testing.T) {
			prompt := mustLoad(t, models.TinyDeepSeek).Tokenizer().Encode("block scales", true)
			for _, mode := range []BF16Mode{BF16Auto, BF16Keep} {
				qdir, fdir, c := qtDirs(t, kimi, mode == BF16Keep, nil)
				q, err := LoadDirWith(qdir, LoadOptions{BF16: mode})
				if err != nil {
					t.Fatal(err)
				}
				f, err := LoadDir(fdir)
				if err != nil {
					t.Fatal(err)
				}
				if q.Config().Family != c.Family {
					t.Fatalf("family %s", q.Config().Family)
				}
				if a, b := promptLogprobs(t, q, prompt), promptLogprobs(t, f, prompt); !slices.Equal(a, b) {
					t.Errorf("mode %d: quantised directory logprobs %v, dequantised float32 %v", mode, a, b)
				}
			}
		})
	}
}

// Malformed quantised weights are refused in one line naming the tensor.
func TestLoadDirQuantisedErrors(t *testing.T) {
	find := func(ts []safetensors.Tensor, suffix string) *safetensors.Tensor {
		for i := range ts {
			if strings.HasSuffix(ts[i].Name, suffix) {
				return &ts[i]
			}
		}
		panic(suffix)
	}
	for _, tc := range []struct {
		name   string
		kimi   bool
		mutate func([]safetensors.Tensor)
		want   string
	}{
		{"scale shape", false, func(ts []safetensors.Tensor) {
			s := find(ts, "layers.1.self_attn.o_proj.weight_scale_inv")
			s.Shape, s.Data = []int64{2, 2}, s.Data[:16]
		}, "o_proj.weight_scale_inv is F32 [2 2], want F32 [4 3]"},
		{"scale dtype", false, func(ts []safetensors.Tensor) {
			s := find(ts, "q_b_proj.weight_scale_inv")
			s.DType, s.Shape = safetensors.U8, []int64{int64(len(s.Data))}
		}, "q_b_proj.weight_scale_inv is U8"},
		{"missing scale", false, func(ts []safetensors.Tensor) {
			find(ts, "layers.0.mlp.up_proj.weight_scale_inv").Name = "unused.weight_scale_inv"
		}, "has no matching quantised weight or scales"},
		{"fp8 shape", false, func(ts []safetensors.Tensor) {
			w := find(ts, "layers.0.self_attn.kv_b_proj.weight")
			w.Shape = []int64{w.Shape[1], w.Shape[0]}
		}, "kv_b_proj.weight has shape [32 128], want [128 32]"},
		{"int4 weight_shape", true, func(ts []safetensors.Tensor) {
			binary.LittleEndian.PutUint32(find(ts, "experts.3.down_proj.weight_shape").Data, 1<<30)
		}, "down_proj.weight_shape is not I32 [2] holding the weight's shape [64 32]"},
		{"int4 packed", true, func(ts []safetensors.Tensor) {
			p := find(ts, "experts.0.gate_proj.weight_packed")
			p.Shape, p.Data = []int64{16, 4}, p.Data[:256]
		}, "gate_proj.weight_packed I32 [16 4] and _scale BF16 [32 4] do not fit [32 64]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qdir, _, _ := qtDirs(t, tc.kimi, false, tc.mutate)
			_, err := LoadDir(qdir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line containing %q", err, tc.want)
			}
		})
	}
}
