package tinkerapi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// Tensor is one array of a datum's loss-function inputs or of a
// forward/backward result. Exactly one of Float32 and Int64 holds the
// values (row-major); Shape is nil for a 1-D tensor of all of them.
type Tensor struct {
	Float32 []float32
	Int64   []int64
	Shape   []int64
}

// Float32s is a 1-D float32 tensor.
func Float32s(v []float32) Tensor { return Tensor{Float32: v} }

// Int64s is a 1-D int64 tensor.
func Int64s(v []int64) Tensor { return Tensor{Int64: v} }

// DType is "int64" or "float32", the two element types on the wire.
func (t Tensor) DType() string {
	if t.Int64 != nil {
		return "int64"
	}
	return "float32"
}

// Len is the number of elements.
func (t Tensor) Len() int {
	if t.Int64 != nil {
		return len(t.Int64)
	}
	return len(t.Float32)
}

func (t Tensor) validate() error {
	if t.Float32 != nil && t.Int64 != nil {
		return errors.New("tensor has both float32 and int64 values")
	}
	if t.Shape == nil {
		return nil
	}
	n := int64(1)
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("tensor shape %v has a negative dimension", t.Shape)
		}
		n *= d
	}
	if n != int64(t.Len()) {
		return fmt.Errorf("tensor shape %v holds %d values, got %d", t.Shape, n, t.Len())
	}
	return nil
}

// shape is the shape sent on the wire: the explicit one or (N,).
func (t Tensor) shape() []int64 {
	if t.Shape != nil {
		return t.Shape
	}
	return []int64{int64(t.Len())}
}

// Datum is one training example: the model's input tokens and the loss
// function's inputs, each aligned with the tokens (position i of
// ModelInput predicts target_tokens[i]). cross_entropy also takes
// target_tokens (and weights) of Shape (N, K): K targets per position,
// row-major; its logprobs then have that shape too.
type Datum struct {
	ModelInput   []int
	LossFnInputs map[string]Tensor
}

// lossInputDType is the element type of a loss-function input whose
// meaning and type are fixed; each has one value per input token. Here and
// in lossFnInputs, a switch and a slice rather than maps, which would be
// built at every start.
func lossInputDType(name string) (string, bool) {
	switch name {
	case "target_tokens":
		return "int64", true
	case "weights", "advantages", "logprobs":
		return "float32", true
	}
	return "", false
}

// lossFnInputs are the loss functions the service implements, in name
// order, and the inputs each needs.
var lossFnInputs = []struct {
	name   string
	inputs []string
}{
	{"cispo", []string{"target_tokens", "logprobs", "advantages"}},
	{"cross_entropy", []string{"target_tokens"}},
	{"dro", []string{"target_tokens", "logprobs", "advantages"}},
	{"importance_sampling", []string{"target_tokens", "logprobs", "advantages"}},
	{"ppo", []string{"target_tokens", "logprobs", "advantages"}},
}

// lossFnNeeds is the inputs lossFn needs, and whether the service knows it.
func lossFnNeeds(lossFn string) ([]string, bool) {
	for _, f := range lossFnInputs {
		if f.name == lossFn {
			return f.inputs, true
		}
	}
	return nil, false
}

// LossFns lists the loss functions forward and forward_backward accept.
func LossFns() []string {
	out := make([]string, len(lossFnInputs))
	for i, f := range lossFnInputs {
		out[i] = f.name
	}
	return out
}

// validate checks what the server would reject, so that a bad datum never
// takes a seq id (a rejected request would leave a gap in the model's order).
func (d Datum) validate(lossFn string) error {
	if len(d.ModelInput) == 0 {
		return errors.New("model input has no tokens")
	}
	for i, tok := range d.ModelInput {
		if tok < 0 || tok > math.MaxInt32 {
			return fmt.Errorf("model input token %d at position %d is not a valid token id", tok, i)
		}
	}
	needs, _ := lossFnNeeds(lossFn)
	for _, k := range needs {
		if _, ok := d.LossFnInputs[k]; !ok {
			return fmt.Errorf("loss function %s needs loss_fn_inputs[%q]", lossFn, k)
		}
	}
	for _, k := range sortedKeys(d.LossFnInputs) {
		t := d.LossFnInputs[k]
		if err := t.validate(); err != nil {
			return fmt.Errorf("loss_fn_inputs[%q]: %w", k, err)
		}
		want, known := lossInputDType(k)
		if !known {
			continue
		}
		if t.DType() != want {
			return fmt.Errorf("loss_fn_inputs[%q] must be %s, got %s", k, want, t.DType())
		}
		if err := d.checkShape(lossFn, k); err != nil {
			return err
		}
	}
	return nil
}

// checkShape checks input k's shape: (N,), one value per input token, or
// for cross_entropy's target_tokens (N, K), K targets per position (top-K
// distillation), with weights then of the same shape.
func (d Datum) checkShape(lossFn, k string) error {
	n, sh := int64(len(d.ModelInput)), d.LossFnInputs[k].shape()
	targets := d.LossFnInputs["target_tokens"].shape()
	wide := lossFn == "cross_entropy" && len(targets) == 2 && targets[0] == n && targets[1] >= 1
	switch {
	case wide && (k == "target_tokens" || k == "weights"):
		if !slices.Equal(sh, targets) {
			return fmt.Errorf("loss_fn_inputs[%q] has shape %v; want %v, the shape of target_tokens", k, sh, targets)
		}
	case len(sh) != 1 || sh[0] != n:
		want := fmt.Sprintf("(%d,), one value per input token", n)
		if lossFn == "cross_entropy" && (k == "target_tokens" || k == "weights") {
			want += fmt.Sprintf(", or (%d, K), K targets per input token", n)
		}
		return fmt.Errorf("loss_fn_inputs[%q] has shape %v; want %s", k, sh, want)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Estimated request bytes, as the service's chunking limit counts them:
// 4 bytes per token (int32 on the wire) plus each tensor's packed values.
const bytesPerToken = 4

func (d Datum) estimatedBytes() int {
	n := bytesPerToken * len(d.ModelInput)
	for _, t := range d.LossFnInputs {
		n += 8 * len(t.Int64)
		n += 4 * len(t.Float32)
	}
	return n
}

// toProto encodes the datum for a forward_backward request body: tokens
// as packed int32, tensors as dense little-endian values in their dtype.
func (d Datum) toProto() *tinkerproto.Datum {
	m := &tinkerproto.Datum{
		ModelInput: []*tinkerproto.Chunk{{Chunk: &tinkerproto.Chunk_EncodedText{
			EncodedText: &tinkerproto.EncodedTextChunk{Tokens: tinkerproto.PackInt32(d.ModelInput)}}}},
		LossFnInputs: make(map[string]*tinkerproto.Tensor, len(d.LossFnInputs)),
	}
	for k, t := range d.LossFnInputs {
		pt := &tinkerproto.Tensor{Shape: t.shape()}
		if t.Int64 != nil {
			pt.Dtype = tinkerproto.DType_DTYPE_INT64
			pt.Encoding = &tinkerproto.Tensor_Dense{Dense: packInt64(t.Int64)}
		} else {
			pt.Dtype = tinkerproto.DType_DTYPE_FLOAT32
			pt.Encoding = &tinkerproto.Tensor_Dense{Dense: tinkerproto.PackFloat32(t.Float32)}
		}
		m.LossFnInputs[k] = pt
	}
	return m
}

func packInt64(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}
