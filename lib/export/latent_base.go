package export

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tinkershell/tinker/lib/quant"
	"github.com/tinkershell/tinker/lib/safetensors"
	"github.com/tinkershell/tinker/lib/userfile"
)

// latentModelType reports the config.json model_types of the DeepSeek-V3
// family: DeepSeek V3/V3.1, Kimi K2 and Kimi K2.5/K2.6 (whose text model
// sits under language_model.). A switch, not a package-level map, which
// would be built at every start of tinker.
func latentModelType(t string) bool {
	switch t {
	case "deepseek_v3", "kimi_k2", "kimi_k25":
		return true
	}
	return false
}

// located is a base tensor and where its bytes are.
type located struct {
	shard string
	t     safetensors.TensorInfo
	off   int64 // in the shard file
}

type latentConfigJSON struct {
	ModelType string            `json:"model_type"`
	Quant     *quant.ConfigJSON `json:"quantization_config"`
	Text      *struct {
		Quant *quant.ConfigJSON `json:"quantization_config"`
	} `json:"text_config"`
}

// latentBase is a DeepSeek V3.1 / Kimi K2 base directory.
type latentBase struct {
	*Base
	modelType string
	quant     quant.Scheme
	all       map[string]located
	qcache    map[string]*qtensor // quantised weights checked so far
}

// readModelType is config.json's model_type ("" when unreadable).
func readModelType(dir string) string {
	var c latentConfigJSON
	if b, err := userfile.ReadFile(filepath.Join(dir, "config.json"), maxConfigBytes); err == nil {
		json.Unmarshal(b, &c)
	}
	return c.ModelType
}

func openLatentBase(dir string) (*latentBase, error) {
	b, err := userfile.ReadFile(filepath.Join(dir, "config.json"), maxConfigBytes)
	if err != nil {
		return nil, fmt.Errorf("base %s: %w", dir, err)
	}
	var c latentConfigJSON
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("base %s: parse config.json: %w", dir, err)
	}
	if !latentModelType(c.ModelType) {
		return nil, fmt.Errorf("base %s has model_type %q, not a DeepSeek V3 / Kimi K2 model (deepseek_v3, kimi_k2, kimi_k25)", dir, c.ModelType)
	}
	qc := c.Quant
	if qc == nil && c.Text != nil {
		qc = c.Text.Quant
	}
	q, err := quant.Parse(qc)
	if err != nil {
		return nil, fmt.Errorf("base %s: config.json quantization_config: %w", dir, err)
	}
	lb := &latentBase{Base: &Base{Dir: dir}, modelType: c.ModelType, quant: q, all: map[string]located{}, qcache: map[string]*qtensor{}}
	if err := lb.findShards(); err != nil {
		return nil, err
	}
	return lb, lb.locate()
}

// locate reads every shard's header.
func (lb *latentBase) locate() error {
	for _, s := range lb.Shards {
		h, err := readShardHeader(filepath.Join(lb.Dir, s))
		if err != nil {
			return err
		}
		for i, t := range h.Tensors {
			if _, dup := lb.all[t.Name]; dup {
				return fmt.Errorf("base %s: tensor %s is in two shards", lb.Dir, t.Name)
			}
			lb.all[t.Name] = located{s, t, h.Offsets[i]}
		}
	}
	return nil
}

// readSmall reads a small tensor (a scale or shape tensor) whole.
func (lb *latentBase) readSmall(l located) ([]byte, error) {
	f, err := userfile.Open(filepath.Join(lb.Dir, l.shard))
	if err != nil {
		return nil, fmt.Errorf("base shard: %w", err)
	}
	defer f.Close()
	b := make([]byte, l.t.Bytes())
	if _, err := f.ReadAt(b, l.off); err != nil {
		return nil, fmt.Errorf("read base tensor %s: %w", l.t.Name, err)
	}
	return b, nil
}

// beside reports whether base tensor name is outside the text model of
// a Kimi K2.5/K2.6 base (its vision tower and projector), which a merge
// copies byte for byte whatever --dtype says: the adapter never touches
// it, and its format is the base's own (vLLM's kimi_k25.py loads
// vision_tower.* and mm_projector.* beside language_model.*).
func (lb *latentBase) beside(name string) bool {
	return lb.modelType == "kimi_k25" && !strings.HasPrefix(name, kimiPrefix)
}

// weightName finds the base tensor a module updates: its own name, or
// under Kimi K2.5/K2.6's language_model. prefix; quantised INT4 weights
// are found by their X.weight_packed.
func (lb *latentBase) weightName(path string) (string, bool) {
	for _, n := range []string{path + ".weight", kimiPrefix + path + ".weight"} {
		if _, ok := lb.all[n]; ok {
			return n, true
		}
		if _, ok := lb.all[n+"_packed"]; ok {
			return n, true
		}
	}
	return "", false
}

// qtensor is a quantised base weight: X.weight (FP8) with
// X.weight_scale_inv, or X.weight_packed (INT4) with X.weight_scale.
type qtensor struct {
	name       string // X.weight, the logical name
	int4       bool
	w, scale   located
	rows, cols int
}

// quantised finds and checks the quantised weight named name, if it is one.
func (lb *latentBase) quantised(name string) (*qtensor, error) {
	if q, ok := lb.qcache[name]; ok {
		return q, nil
	}
	q, err := lb.findQuantised(name)
	if err == nil {
		lb.qcache[name] = q
	}
	return q, err
}

func (lb *latentBase) findQuantised(name string) (*qtensor, error) {
	if l, ok := lb.all[name]; ok && l.t.DType == safetensors.F8E4M3 {
		return lb.fp8Tensor(name, l)
	}
	if l, ok := lb.all[name+"_packed"]; ok {
		return lb.int4Tensor(name, l)
	}
	return nil, nil
}

func (lb *latentBase) fp8Tensor(name string, l located) (*qtensor, error) {
	b := lb.quant.Block
	if b[0] == 0 {
		return nil, fmt.Errorf("base %s: %s is FP8 but config.json has no fp8 quantization_config with weight_block_size", lb.Dir, name)
	}
	s, ok := lb.all[name+"_scale_inv"]
	if len(l.t.Shape) != 2 || !ok {
		return nil, fmt.Errorf("base %s: FP8 tensor %s is not a matrix with a %s_scale_inv", lb.Dir, name, name)
	}
	rows, cols := int(l.t.Shape[0]), int(l.t.Shape[1])
	want := lb.quant.FP8ScaleShape(rows, cols)
	if s.t.DType != safetensors.F32 || !slices.Equal(s.t.Shape, want) {
		return nil, fmt.Errorf("base %s: %s_scale_inv is %s %v, want F32 %v for %d×%d blocks", lb.Dir, name, s.t.DType, s.t.Shape, want, b[0], b[1])
	}
	return &qtensor{name: name, w: l, scale: s, rows: rows, cols: cols}, nil
}

func (lb *latentBase) int4Tensor(name string, l located) (*qtensor, error) {
	g := lb.quant.Group
	s, ok1 := lb.all[name+"_scale"]
	sh, ok2 := lb.all[name+"_shape"]
	if g == 0 || !ok1 || !ok2 || sh.t.DType != safetensors.I32 || !slices.Equal(sh.t.Shape, []int64{2}) {
		return nil, fmt.Errorf("base %s: %s_packed needs a pack-quantized quantization_config, %s_scale and an I32 %s_shape of 2", lb.Dir, name, name, name)
	}
	raw, err := lb.readSmall(sh)
	if err != nil {
		return nil, err
	}
	rows, cols := int(int32(binary.LittleEndian.Uint32(raw))), int(int32(binary.LittleEndian.Uint32(raw[4:])))
	ps, ss, ok := lb.quant.Int4Shapes(rows, cols)
	if !ok || l.t.DType != safetensors.I32 || !slices.Equal(l.t.Shape, ps) || s.t.DType != safetensors.BF16 || !slices.Equal(s.t.Shape, ss) {
		return nil, fmt.Errorf("base %s: %s_packed %s %v and _scale %s %v do not fit weight_shape [%d %d] in groups of %d",
			lb.Dir, name, l.t.DType, l.t.Shape, s.t.DType, s.t.Shape, rows, cols, g)
	}
	return &qtensor{name: name, int4: true, w: l, scale: s, rows: rows, cols: cols}, nil
}

// shape is the [rows, cols] of the matrix a base weight name holds.
func (lb *latentBase) shape(name string) ([]int64, error) {
	q, err := lb.quantised(name)
	if err != nil || q != nil {
		if q == nil {
			return nil, err
		}
		return []int64{int64(q.rows), int64(q.cols)}, nil
	}
	if t := lb.all[name].t; !isFloat(t.DType) {
		return nil, fmt.Errorf("base %s: %s has dtype %s, which the merge does not read (F32, BF16, F16, FP8 E4M3 blocks, INT4 packed)", lb.Dir, name, t.DType)
	}
	return lb.all[name].t.Shape, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
