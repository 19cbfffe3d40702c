package tinkerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tinkershell/tinker/lib/tinkerproto"
	"github.com/tinkershell/tinker/lib/wiretensor"
)

// ForwardBackwardInput is one forward or forward_backward call: the batch,
// the loss function (see LossFns) and its optional numeric settings, such
// as ppo's clip_low_threshold and clip_high_threshold.
type ForwardBackwardInput struct {
	Data         []Datum
	LossFn       string
	LossFnConfig map[string]float64
}

func (in ForwardBackwardInput) validate() error {
	if len(in.Data) == 0 {
		return errors.New("no data")
	}
	if _, ok := lossFnNeeds(in.LossFn); !ok {
		return fmt.Errorf("unknown loss function %q (want one of %s)", in.LossFn, strings.Join(LossFns(), ", "))
	}
	for _, k := range sortedKeys(in.LossFnConfig) {
		if v := in.LossFnConfig[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("loss_fn_config[%q] is %v", k, v)
		}
	}
	for i, d := range in.Data {
		if err := d.validate(in.LossFn); err != nil {
			return fmt.Errorf("datum %d: %w", i, err)
		}
	}
	return nil
}

// ForwardBackwardOutput is the result of forward or forward_backward:
// per datum, in input order, the loss function's outputs (logprobs, the
// target tokens' log-probabilities; elementwise_loss for cross_entropy),
// and the metrics, keyed "<name>:<reduction>" (loss:sum is the loss).
type ForwardBackwardOutput struct {
	LossFnOutputType string
	LossFnOutputs    []map[string]Tensor
	Metrics          map[string]float64
}

// Loss returns the loss:sum metric.
func (o *ForwardBackwardOutput) Loss() (float64, bool) {
	v, ok := o.Metrics["loss:sum"]
	return v, ok
}

// Logprobs returns each datum's "logprobs" output (nil where absent).
func (o *ForwardBackwardOutput) Logprobs() [][]float32 {
	out := make([][]float32, len(o.LossFnOutputs))
	for i, m := range o.LossFnOutputs {
		out[i] = m["logprobs"].Float32
	}
	return out
}

// ChunkLimits bound one forward_backward request; a larger batch is split
// into several requests (chunks), each taking its own seq id.
type ChunkLimits struct {
	MaxLen   int // datums per request
	MaxBytes int // estimated body bytes per request
}

// Limits a server advertises unless it says otherwise in client/config.
var defaultChunkLimits = ChunkLimits{MaxLen: 1024, MaxBytes: 5_000_000}

// chunkLimitsFrom reads fwdbwd_max_chunk_len and
// fwdbwd_max_chunk_bytes_count from a client/config body; absent or
// non-positive values keep the defaults.
func chunkLimitsFrom(raw json.RawMessage) ChunkLimits {
	l := defaultChunkLimits
	var cc struct {
		MaxLen   int `json:"fwdbwd_max_chunk_len"`
		MaxBytes int `json:"fwdbwd_max_chunk_bytes_count"`
	}
	if len(raw) > 0 && json.Unmarshal(raw, &cc) == nil {
		if cc.MaxLen > 0 {
			l.MaxLen = cc.MaxLen
		}
		if cc.MaxBytes > 0 {
			l.MaxBytes = cc.MaxBytes
		}
	}
	return l
}

// chunkData splits data greedily in order: a chunk closes when it holds
// MaxLen datums or the next datum would take it past MaxBytes. A datum
// larger than MaxBytes on its own still goes, alone.
func chunkData(data []Datum, l ChunkLimits) [][]Datum {
	var chunks [][]Datum
	start, bytes := 0, 0
	for i, d := range data {
		n := d.estimatedBytes()
		if i > start && (bytes+n > l.MaxBytes || i-start == l.MaxLen) {
			chunks = append(chunks, data[start:i])
			start, bytes = i, 0
		}
		bytes += n
	}
	return append(chunks, data[start:])
}

// combineOutputs joins the chunk results in chunk order: outputs are
// concatenated and metrics merged with MergeMetrics, weighted by each
// chunk's datum count.
func combineOutputs(parts []*ForwardBackwardOutput) *ForwardBackwardOutput {
	out := &ForwardBackwardOutput{LossFnOutputType: parts[0].LossFnOutputType}
	metrics := make([]map[string]float64, len(parts))
	weights := make([]float64, len(parts))
	for i, p := range parts {
		out.LossFnOutputs = append(out.LossFnOutputs, p.LossFnOutputs...)
		metrics[i], weights[i] = p.Metrics, float64(len(p.LossFnOutputs))
	}
	out.Metrics = MergeMetrics(metrics, weights)
	return out
}

// DecodeForwardBackwardProto decodes a tinker_public.ForwardBackwardOutput:
// each record's fields hold all its datums back to back, split by byte
// offsets; bfloat16 values widen to float32 and int32 to int64.
func DecodeForwardBackwardProto(b []byte) (*ForwardBackwardOutput, error) {
	var m tinkerproto.ForwardBackwardOutput
	if err := tinkerproto.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode forward_backward result: %w", err)
	}
	out := &ForwardBackwardOutput{Metrics: m.GetMetrics()}
	t := m.GetLossFnOutputType()
	out.LossFnOutputType = t[strings.LastIndex(t, ":")+1:]
	if out.LossFnOutputType == "" && len(m.GetLossFnOutputs()) == 0 {
		out.LossFnOutputType = "ArrayRecord"
	}
	for ri, rec := range m.GetLossFnOutputs() {
		n := int(rec.GetNumDatums())
		fields := map[string][]Tensor{}
		for _, name := range sortedKeys(rec.GetFields()) {
			ts, err := decodeBatched(rec.GetFields()[name])
			if err != nil {
				return nil, fmt.Errorf("decode forward_backward result: record %d field %q: %w", ri, name, err)
			}
			if n == 0 {
				n = len(ts) // older servers leave num_datums unset
			}
			if len(ts) != n {
				return nil, fmt.Errorf("decode forward_backward result: record %d field %q has %d datums, want %d", ri, name, len(ts), n)
			}
			fields[name] = ts
		}
		for i := 0; i < n; i++ {
			d := make(map[string]Tensor, len(fields))
			for name, ts := range fields {
				d[name] = ts[i]
			}
			out.LossFnOutputs = append(out.LossFnOutputs, d)
		}
	}
	if out.Metrics == nil {
		out.Metrics = map[string]float64{}
	}
	return out, nil
}

// decodeBatched splits a BatchedTensor into one tensor per datum.
func decodeBatched(bt *tinkerproto.BatchedTensor) ([]Tensor, error) {
	size := wiretensor.Size(bt.GetDtype())
	if size == 0 {
		return nil, fmt.Errorf("unsupported dtype %v", bt.GetDtype())
	}
	offs, err := wiretensor.Int64s(bt.GetOffsets())
	if err != nil {
		return nil, fmt.Errorf("offsets: %w", err)
	}
	data := bt.GetData()
	trailing := int64(1)
	for _, d := range bt.GetTrailingShape() {
		trailing *= d
	}
	var out []Tensor
	for i := 0; i+1 < len(offs); i++ {
		lo, hi := offs[i], offs[i+1]
		if lo < 0 || hi < lo || hi > int64(len(data)) || (hi-lo)%int64(size) != 0 {
			return nil, fmt.Errorf("datum %d: byte range [%d, %d) does not fit %d bytes of %d-byte values", i, lo, hi, len(data), size)
		}
		v, err := wiretensor.Dense(data[lo:hi], bt.GetDtype())
		if err != nil {
			return nil, fmt.Errorf("datum %d: %w", i, err)
		}
		t := Tensor{Float32: v.Float32, Int64: v.Int64}
		if len(bt.GetTrailingShape()) > 0 {
			lead := int64(0)
			if trailing > 0 {
				lead = int64(t.Len()) / trailing
			}
			t.Shape = append([]int64{lead}, bt.GetTrailingShape()...)
		}
		out = append(out, t)
	}
	return out, nil
}

// DecodeForwardBackwardJSON decodes the JSON form of a forward/backward
// result, which servers send when not asked for protobuf; tensors may be
// sparse CSR and are returned dense.
func DecodeForwardBackwardJSON(b []byte) (*ForwardBackwardOutput, error) {
	if err := requireFields("loss_fn_outputs")(b); err != nil {
		return nil, fmt.Errorf("decode forward_backward result: %w", err)
	}
	var w struct {
		LossFnOutputType string                  `json:"loss_fn_output_type"`
		LossFnOutputs    []map[string]jsonTensor `json:"loss_fn_outputs"`
		Metrics          map[string]float64      `json:"metrics"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("decode forward_backward result: %w", &SchemaError{Path: "/api/v1/retrieve_future", Reason: err.Error()})
	}
	out := &ForwardBackwardOutput{LossFnOutputType: w.LossFnOutputType, Metrics: w.Metrics}
	if out.Metrics == nil {
		out.Metrics = map[string]float64{}
	}
	for i, m := range w.LossFnOutputs {
		d := make(map[string]Tensor, len(m))
		for _, name := range sortedKeys(m) {
			t, err := m[name].tensor()
			if err != nil {
				return nil, fmt.Errorf("decode forward_backward result: datum %d field %q: %w", i, name, err)
			}
			d[name] = t
		}
		out.LossFnOutputs = append(out.LossFnOutputs, d)
	}
	return out, nil
}

// jsonTensor is the JSON form of a tensor: flat values (only the non-zero
// ones when sparse), a dtype, an optional shape and optional CSR indices.
type jsonTensor struct {
	Data        []float64 `json:"data"`
	DType       string    `json:"dtype"`
	Shape       []int64   `json:"shape"`
	CrowIndices []int64   `json:"sparse_crow_indices"`
	ColIndices  []int64   `json:"sparse_col_indices"`
}

func (j jsonTensor) tensor() (Tensor, error) {
	vals := j.Data
	if j.CrowIndices != nil {
		var err error
		if vals, err = wiretensor.CSR(j.Data, j.CrowIndices, j.ColIndices, j.Shape, 0); err != nil {
			return Tensor{}, err
		}
	}
	t := Tensor{Shape: j.Shape}
	switch j.DType {
	case "float32":
		t.Float32 = make([]float32, len(vals))
		for i, v := range vals {
			t.Float32[i] = float32(v)
		}
	case "int64":
		t.Int64 = make([]int64, len(vals))
		for i, v := range vals {
			t.Int64[i] = int64(v)
		}
	default:
		return t, fmt.Errorf("unknown dtype %q", j.DType)
	}
	return t, t.validate()
}
