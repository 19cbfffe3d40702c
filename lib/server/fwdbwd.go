package server

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/tinkerproto"
	"github.com/tinkershell/tinker/lib/wiretensor"
)

// Decoding forward/forward_backward requests (protobuf and JSON) into the
// engine's datums, and encoding their results. Every count is checked
// against the bounds in limits.go before anything proportional to it is
// allocated; see docs/protocol.md, "Training".

// fwdRequest is a decoded forward or forward_backward request.
type fwdRequest struct {
	ModelID     string
	SeqID       *int
	LossFn      string
	LossConfig  map[string]float64
	ForwardOnly bool
	Data        []engine.Datum
}

// readFwdBody reads a request body of at most maxTrainingBodyBytes, both
// as sent and, for a zstd body (Content-Encoding: zstd, which clients
// send when client/config offers proto_compress_fwdbwd), once
// decompressed: a small body that would inflate past the bound (a zstd
// bomb) is refused without ever holding more than the bound.
func readFwdBody(r *http.Request) ([]byte, *errorResponse) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxTrainingBodyBytes))
	if err != nil {
		return nil, errorf(http.StatusRequestEntityTooLarge, "request body: %v (at most %d bytes; split the batch into smaller requests)", err, maxTrainingBodyBytes)
	}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return b, nil
	case "zstd":
		return unzstdBody(b)
	default:
		return nil, errorf(http.StatusUnsupportedMediaType, "Content-Encoding %q is not supported by the local server; send the body uncompressed or zstd-compressed", enc)
	}
}

// decodeFwdProto decodes a tinker_public.ForwardBackwardRequest body.
// Like decodeFwdJSON, once the body parses it returns the request's
// model_id and seq_id with any error, so that the refusal uses up the
// seq_id (useUpSeq).
func decodeFwdProto(b []byte) (*fwdRequest, *errorResponse) {
	var m tinkerproto.ForwardBackwardRequest
	if err := tinkerproto.Unmarshal(b, &m); err != nil {
		return nil, errorf(http.StatusBadRequest, "Invalid ForwardBackwardRequest protobuf body: %v", err)
	}
	seq := int(m.GetSeqId())
	req := &fwdRequest{ModelID: m.GetModelId(), SeqID: &seq, LossFn: m.GetLossFn(), LossConfig: m.GetLossFnConfig(), ForwardOnly: m.GetForwardOnly()}
	if e := checkDatumCount(len(m.GetData())); e != nil {
		return req, e
	}
	total, targets := 0, 0
	for i, d := range m.GetData() {
		n := 0
		for j, ch := range d.GetModelInput() {
			et := ch.GetEncodedText()
			if et == nil {
				return req, errorf(http.StatusBadRequest, "data[%d].model_input.chunks[%d]: only encoded_text chunks are supported by the local server", i, j)
			}
			n += len(et.GetTokens()) / 4
		}
		if e := checkTokens(i, n, &total); e != nil {
			return req, e
		}
		width, e := targetWidth(d.GetLossFnInputs()[engine.InputTargetTokens].GetShape(), n, i, &targets)
		if e != nil {
			return req, e
		}
		dt := engine.Datum{ModelInput: make([]int, 0, n), LossFnInputs: map[string][]float64{}, Width: width}
		for j, ch := range d.GetModelInput() {
			toks, err := tinkerproto.UnpackInt32(ch.GetEncodedText().GetTokens())
			if err != nil {
				return req, errorf(http.StatusBadRequest, "data[%d].model_input.chunks[%d].tokens: %v", i, j, err)
			}
			dt.ModelInput = append(dt.ModelInput, toks...)
		}
		for _, k := range sortedNames(d.GetLossFnInputs()) {
			v, e := protoTensor(d.GetLossFnInputs()[k], n*max(width, 1), fmt.Sprintf("data[%d].loss_fn_inputs.%s", i, k))
			if e != nil {
				return req, e
			}
			dt.LossFnInputs[k] = v
		}
		req.Data = append(req.Data, dt)
	}
	return req, nil
}

func checkDatumCount(n int) *errorResponse {
	if n > maxDatums {
		return errorf(http.StatusBadRequest, "data: %d datums exceed the local server's %d per request; split the batch", n, maxDatums)
	}
	return nil
}

// checkTokens bounds datum i's n tokens and the running total.
func checkTokens(i, n int, total *int) *errorResponse {
	if n > maxDatumTokens {
		return errorf(http.StatusBadRequest, "data[%d].model_input: %d tokens exceed the local server's %d per datum", i, n, maxDatumTokens)
	}
	if *total += n; *total > maxRequestTokens {
		return errorf(http.StatusBadRequest, "data: more than %d tokens in one request; split the batch", maxRequestTokens)
	}
	return nil
}

// targetWidth reads the shape of datum i's target_tokens: 0 for (N,) (or
// no shape), K for (N, K), K targets per position for cross_entropy's top-K
// form. targets counts the request's target values, bounded like tokens.
func targetWidth(shape []int64, n, i int, targets *int) (int, *errorResponse) {
	field := fmt.Sprintf("data[%d].loss_fn_inputs.target_tokens", i)
	width := 0
	switch {
	case len(shape) == 2 && shape[0] == int64(n) && shape[1] >= 1 && shape[1] <= maxTargetWidth:
		width = int(shape[1])
	case len(shape) >= 2:
		return 0, errorf(http.StatusBadRequest, "%s: shape %v is neither (%d,) nor (%d, K) with 1 <= K <= %d", field, shape, n, n, maxTargetWidth)
	}
	if *targets += n * max(width, 1); *targets > maxRequestTokens {
		return 0, errorf(http.StatusBadRequest, "data: more than %d target tokens in one request; split the batch", maxRequestTokens)
	}
	return width, nil
}

// protoTensor decodes a loss_fn_inputs tensor of a datum with n values
// (tokens, times K for (N, K) targets) to float64 values; a longer tensor is
// refused before it is expanded (the engine reports shorter ones by name).
func protoTensor(t *tinkerproto.Tensor, n int, field string) ([]float64, *errorResponse) {
	size := wiretensor.Size(t.GetDtype())
	if size == 0 {
		return nil, errorf(http.StatusBadRequest, "%s: unsupported dtype %v", field, t.GetDtype())
	}
	if sp := t.GetSparseCsr(); sp != nil {
		if len(sp.GetValues())%size != 0 || len(sp.GetCrowIndices())%8 != 0 || len(sp.GetColIndices())%8 != 0 {
			return nil, errorf(http.StatusBadRequest, "%s: sparse arrays are not whole values", field)
		}
		if len(sp.GetValues())/size > n || len(sp.GetColIndices())/8 > n || len(sp.GetCrowIndices())/8 > n+1 {
			return nil, errorf(http.StatusBadRequest, "%s: more values than the datum's %d", field, n)
		}
		vals, _ := wiretensor.Dense(sp.GetValues(), t.GetDtype()) // whole values: checked above
		crow, _ := wiretensor.Int64s(sp.GetCrowIndices())
		col, _ := wiretensor.Int64s(sp.GetColIndices())
		dense, err := wiretensor.CSR(vals.Float64s(), crow, col, t.GetShape(), n)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "%s: %v", field, err)
		}
		return dense, nil
	}
	b := t.GetDense()
	if len(b)%size != 0 {
		return nil, errorf(http.StatusBadRequest, "%s: %d bytes are not whole %d-byte values", field, len(b), size)
	}
	if len(b)/size > n {
		return nil, errorf(http.StatusBadRequest, "%s: has %d values but the datum takes %d", field, len(b)/size, n)
	}
	vals, _ := wiretensor.Dense(b, t.GetDtype()) // whole values: checked above
	return vals.Float64s(), nil
}

// jsonFwdInput is the JSON form of a forward/forward_backward input.
type jsonFwdInput struct {
	Data []struct {
		ModelInput struct {
			Chunks []struct {
				Type   string `json:"type"`
				Tokens []int  `json:"tokens"`
			} `json:"chunks"`
		} `json:"model_input"`
		LossFnInputs map[string]struct {
			Data        []float64 `json:"data"`
			DType       string    `json:"dtype"`
			Shape       []int64   `json:"shape"`
			CrowIndices []int64   `json:"sparse_crow_indices"`
			ColIndices  []int64   `json:"sparse_col_indices"`
		} `json:"loss_fn_inputs"`
	} `json:"data"`
	LossFn       string             `json:"loss_fn"`
	LossFnConfig map[string]float64 `json:"loss_fn_config"`
}

// decodeFwdJSON decodes the JSON bodies: forward_backward
// {forward_backward_input, model_id, seq_id} and the legacy forward
// {forward_input, model_id, seq_id}. JSON arrays are allocated while they
// are decoded, so the body bound is what limits them; the counts are
// checked right after.
func decodeFwdJSON(b []byte, forwardOnly bool) (*fwdRequest, *errorResponse) {
	var body struct {
		ModelID string        `json:"model_id"`
		SeqID   *int          `json:"seq_id"`
		FB      *jsonFwdInput `json:"forward_backward_input"`
		F       *jsonFwdInput `json:"forward_input"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, errorf(http.StatusUnprocessableEntity, "Invalid JSON body: %v", err)
	}
	req := &fwdRequest{ModelID: body.ModelID, SeqID: body.SeqID, ForwardOnly: forwardOnly}
	in := body.FB
	if forwardOnly {
		in = body.F
	}
	if in == nil {
		return req, errorf(http.StatusUnprocessableEntity, "missing %s", map[bool]string{true: "forward_input", false: "forward_backward_input"}[forwardOnly])
	}
	req.LossFn, req.LossConfig = in.LossFn, in.LossFnConfig
	if e := checkDatumCount(len(in.Data)); e != nil {
		return req, e
	}
	total, targets := 0, 0
	for i, d := range in.Data {
		dt := engine.Datum{LossFnInputs: map[string][]float64{}}
		for j, ch := range d.ModelInput.Chunks {
			if ch.Type != "" && ch.Type != "encoded_text" {
				return req, errorf(http.StatusBadRequest, "data[%d].model_input.chunks[%d]: chunk type %q is not supported by the local server (only encoded_text)", i, j, ch.Type)
			}
			dt.ModelInput = append(dt.ModelInput, ch.Tokens...)
		}
		n := len(dt.ModelInput)
		if e := checkTokens(i, n, &total); e != nil {
			return req, e
		}
		var e *errorResponse
		if dt.Width, e = targetWidth(d.LossFnInputs[engine.InputTargetTokens].Shape, n, i, &targets); e != nil {
			return req, e
		}
		for _, k := range sortedNames(d.LossFnInputs) {
			t := d.LossFnInputs[k]
			field := fmt.Sprintf("data[%d].loss_fn_inputs.%s", i, k)
			if t.DType != "int64" && t.DType != "float32" {
				return req, errorf(http.StatusBadRequest, "%s: dtype must be int64 or float32, got %q", field, t.DType)
			}
			v := t.Data
			if t.CrowIndices != nil {
				var err error
				if v, err = wiretensor.CSR(t.Data, t.CrowIndices, t.ColIndices, t.Shape, n*max(dt.Width, 1)); err != nil {
					return req, errorf(http.StatusBadRequest, "%s: %v", field, err)
				}
			} else if t.DType == "float32" {
				v = slices.Clone(v)
				for p, x := range v {
					v[p] = float64(float32(x)) // the values the protobuf form would carry
				}
			}
			dt.LossFnInputs[k] = v
		}
		req.Data = append(req.Data, dt)
	}
	return req, nil
}

func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fwdResultProto encodes a result as tinker_public.ForwardBackwardOutput:
// ArrayRecords whose fields hold their datums' values back to back. A
// record's datums share one trailing shape, so a run of datums with (N, K)
// targets gets a record of its own with trailing shape (K).
func fwdResultProto(res *engine.ForwardResult) []byte {
	m := &tinkerproto.ForwardBackwardOutput{LossFnOutputType: "ArrayRecord", Metrics: res.Metrics()}
	for lo := 0; lo < len(res.Outputs); {
		hi := lo + 1
		for hi < len(res.Outputs) && res.Outputs[hi].Width == res.Outputs[lo].Width {
			hi++
		}
		m.LossFnOutputs = append(m.LossFnOutputs, fwdRecord(res.Outputs[lo:hi]))
		lo = hi
	}
	if len(res.Outputs) == 0 {
		m.LossFnOutputs = []*tinkerproto.ArrayRecord{fwdRecord(nil)}
	}
	b, _ := tinkerproto.Marshal(m)
	return b
}

// fwdRecord encodes outputs of one width as an ArrayRecord.
func fwdRecord(outs []engine.DatumOutput) *tinkerproto.ArrayRecord {
	var trailing []int64
	if len(outs) > 0 && outs[0].Width > 0 {
		trailing = []int64{int64(outs[0].Width)}
	}
	fields := map[string]*tinkerproto.BatchedTensor{}
	add := func(name string, get func(engine.DatumOutput) []float32) {
		var data []byte
		offs := make([]byte, 8, 8*(len(outs)+1))
		for _, o := range outs {
			data = append(data, tinkerproto.PackFloat32(get(o))...)
			offs = binary.LittleEndian.AppendUint64(offs, uint64(len(data)))
		}
		fields[name] = &tinkerproto.BatchedTensor{Data: data, Offsets: offs, Dtype: tinkerproto.DType_DTYPE_FLOAT32, TrailingShape: trailing}
	}
	add("logprobs", func(o engine.DatumOutput) []float32 { return o.Logprobs })
	if len(outs) > 0 && outs[0].ElementwiseLoss != nil {
		add("elementwise_loss", func(o engine.DatumOutput) []float32 { return o.ElementwiseLoss })
	}
	return &tinkerproto.ArrayRecord{TypeTag: "ArrayRecord", Fields: fields, NumDatums: int64(len(outs))}
}

// fwdResultJSON encodes a result in the JSON form; outputs of (N, K)
// targets have shape (N, K).
func fwdResultJSON(res *engine.ForwardResult) []byte {
	type tensor struct {
		Data  []float32 `json:"data"`
		DType string    `json:"dtype"`
		Shape []int     `json:"shape"`
	}
	outs := make([]map[string]tensor, len(res.Outputs))
	for i, o := range res.Outputs {
		shape := func(v []float32) []int {
			if o.Width > 0 {
				return []int{len(v) / o.Width, o.Width}
			}
			return []int{len(v)}
		}
		outs[i] = map[string]tensor{"logprobs": {o.Logprobs, "float32", shape(o.Logprobs)}}
		if o.ElementwiseLoss != nil {
			outs[i]["elementwise_loss"] = tensor{o.ElementwiseLoss, "float32", shape(o.ElementwiseLoss)}
		}
	}
	b, _ := json.Marshal(map[string]any{"loss_fn_output_type": "ArrayRecord", "loss_fn_outputs": outs, "metrics": res.Metrics()})
	return b
}

// isProto reports whether a request body is protobuf.
func isProto(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-protobuf")
}
