package tinkerproto

import "strconv"

// The messages of tinker_public.proto that tinker sends or reads, with the
// field names and getters protoc-gen-go would give them. SamplingParams,
// StopStrings and StopTokens are in the schema but nothing here uses them.

// StopReason says why a sampled sequence ended.
type StopReason int32

const (
	StopReason_STOP_REASON_STOP   StopReason = 0
	StopReason_STOP_REASON_LENGTH StopReason = 1
)

func (x StopReason) String() string {
	switch x {
	case StopReason_STOP_REASON_STOP:
		return "STOP_REASON_STOP"
	case StopReason_STOP_REASON_LENGTH:
		return "STOP_REASON_LENGTH"
	}
	return strconv.Itoa(int(x))
}

// DType is the element type of a tensor's bytes.
type DType int32

const (
	DType_DTYPE_UNSPECIFIED DType = 0
	DType_DTYPE_FLOAT32     DType = 1
	DType_DTYPE_INT64       DType = 2
	DType_DTYPE_INT32       DType = 3
	DType_DTYPE_BFLOAT16    DType = 4
)

var dtypeNames = [...]string{"DTYPE_UNSPECIFIED", "DTYPE_FLOAT32", "DTYPE_INT64", "DTYPE_INT32", "DTYPE_BFLOAT16"}

func (x DType) String() string {
	if x >= 0 && int(x) < len(dtypeNames) {
		return dtypeNames[x]
	}
	return strconv.Itoa(int(x))
}

type SampleResponse struct {
	Sequences            []*SampledSequence
	PromptLogprobs       []byte // optional: nil is absent; float32[], NaN = not computed
	TopkPromptLogprobs   *TopkPromptLogprobs
	PromptCacheHitTokens int32
}

func (x *SampleResponse) GetSequences() []*SampledSequence {
	if x != nil {
		return x.Sequences
	}
	return nil
}

func (x *SampleResponse) GetPromptLogprobs() []byte {
	if x != nil {
		return x.PromptLogprobs
	}
	return nil
}

func (x *SampleResponse) GetTopkPromptLogprobs() *TopkPromptLogprobs {
	if x != nil {
		return x.TopkPromptLogprobs
	}
	return nil
}

func (x *SampleResponse) GetPromptCacheHitTokens() int32 {
	if x != nil {
		return x.PromptCacheHitTokens
	}
	return 0
}

type SampledSequence struct {
	StopReason StopReason
	Tokens     []byte // int32[]
	Logprobs   []byte // optional: nil is absent; float32[], as long as Tokens
}

func (x *SampledSequence) GetStopReason() StopReason {
	if x != nil {
		return x.StopReason
	}
	return StopReason_STOP_REASON_STOP
}

func (x *SampledSequence) GetTokens() []byte {
	if x != nil {
		return x.Tokens
	}
	return nil
}

func (x *SampledSequence) GetLogprobs() []byte {
	if x != nil {
		return x.Logprobs
	}
	return nil
}

type TopkPromptLogprobs struct {
	TokenIds     []byte // int32[N*K]
	Logprobs     []byte // float32[N*K]
	K            uint32
	PromptLength uint32
}

func (x *TopkPromptLogprobs) GetTokenIds() []byte {
	if x != nil {
		return x.TokenIds
	}
	return nil
}

func (x *TopkPromptLogprobs) GetLogprobs() []byte {
	if x != nil {
		return x.Logprobs
	}
	return nil
}

func (x *TopkPromptLogprobs) GetK() uint32 {
	if x != nil {
		return x.K
	}
	return 0
}

func (x *TopkPromptLogprobs) GetPromptLength() uint32 {
	if x != nil {
		return x.PromptLength
	}
	return 0
}

type ForwardBackwardRequest struct {
	ModelId      string
	SeqId        int32
	Data         []*Datum
	LossFn       string
	LossFnConfig map[string]float64
	ForwardOnly  bool
}

func (x *ForwardBackwardRequest) GetModelId() string {
	if x != nil {
		return x.ModelId
	}
	return ""
}

func (x *ForwardBackwardRequest) GetSeqId() int32 {
	if x != nil {
		return x.SeqId
	}
	return 0
}

func (x *ForwardBackwardRequest) GetData() []*Datum {
	if x != nil {
		return x.Data
	}
	return nil
}

func (x *ForwardBackwardRequest) GetLossFn() string {
	if x != nil {
		return x.LossFn
	}
	return ""
}

func (x *ForwardBackwardRequest) GetLossFnConfig() map[string]float64 {
	if x != nil {
		return x.LossFnConfig
	}
	return nil
}

func (x *ForwardBackwardRequest) GetForwardOnly() bool {
	if x != nil {
		return x.ForwardOnly
	}
	return false
}

type Datum struct {
	ModelInput   []*Chunk
	LossFnInputs map[string]*Tensor
}

func (x *Datum) GetModelInput() []*Chunk {
	if x != nil {
		return x.ModelInput
	}
	return nil
}

func (x *Datum) GetLossFnInputs() map[string]*Tensor {
	if x != nil {
		return x.LossFnInputs
	}
	return nil
}

// Chunk is one part of a model input; Chunk holds one of *Chunk_EncodedText,
// *Chunk_Image or *Chunk_Dmel.
type Chunk struct {
	Chunk isChunk_Chunk
}

type isChunk_Chunk interface{ isChunk_Chunk() }

type Chunk_EncodedText struct{ EncodedText *EncodedTextChunk }
type Chunk_Image struct{ Image *ImageChunk }
type Chunk_Dmel struct{ Dmel *DmelChunk }

func (*Chunk_EncodedText) isChunk_Chunk() {}
func (*Chunk_Image) isChunk_Chunk()       {}
func (*Chunk_Dmel) isChunk_Chunk()        {}

func (x *Chunk) GetChunk() isChunk_Chunk {
	if x != nil {
		return x.Chunk
	}
	return nil
}

func (x *Chunk) GetEncodedText() *EncodedTextChunk {
	if c, ok := x.GetChunk().(*Chunk_EncodedText); ok {
		return c.EncodedText
	}
	return nil
}

func (x *Chunk) GetImage() *ImageChunk {
	if c, ok := x.GetChunk().(*Chunk_Image); ok {
		return c.Image
	}
	return nil
}

func (x *Chunk) GetDmel() *DmelChunk {
	if c, ok := x.GetChunk().(*Chunk_Dmel); ok {
		return c.Dmel
	}
	return nil
}

type EncodedTextChunk struct {
	Tokens []byte // int32[]
}

func (x *EncodedTextChunk) GetTokens() []byte {
	if x != nil {
		return x.Tokens
	}
	return nil
}

type ImageChunk struct {
	Data           []byte
	Format         string // "png" | "jpeg"
	ExpectedTokens *int32
}

func (x *ImageChunk) GetData() []byte {
	if x != nil {
		return x.Data
	}
	return nil
}

func (x *ImageChunk) GetFormat() string {
	if x != nil {
		return x.Format
	}
	return ""
}

func (x *ImageChunk) GetExpectedTokens() int32 {
	if x != nil && x.ExpectedTokens != nil {
		return *x.ExpectedTokens
	}
	return 0
}

type DmelChunk struct {
	Dmel []byte
}

func (x *DmelChunk) GetDmel() []byte {
	if x != nil {
		return x.Dmel
	}
	return nil
}

// Tensor is a loss input; Encoding holds *Tensor_Dense or *Tensor_SparseCsr.
type Tensor struct {
	Encoding isTensor_Encoding
	Dtype    DType
	Shape    []int64
}

type isTensor_Encoding interface{ isTensor_Encoding() }

type Tensor_Dense struct{ Dense []byte }
type Tensor_SparseCsr struct{ SparseCsr *SparseCsr }

func (*Tensor_Dense) isTensor_Encoding()     {}
func (*Tensor_SparseCsr) isTensor_Encoding() {}

func (x *Tensor) GetEncoding() isTensor_Encoding {
	if x != nil {
		return x.Encoding
	}
	return nil
}

func (x *Tensor) GetDense() []byte {
	if e, ok := x.GetEncoding().(*Tensor_Dense); ok {
		return e.Dense
	}
	return nil
}

func (x *Tensor) GetSparseCsr() *SparseCsr {
	if e, ok := x.GetEncoding().(*Tensor_SparseCsr); ok {
		return e.SparseCsr
	}
	return nil
}

func (x *Tensor) GetDtype() DType {
	if x != nil {
		return x.Dtype
	}
	return DType_DTYPE_UNSPECIFIED
}

func (x *Tensor) GetShape() []int64 {
	if x != nil {
		return x.Shape
	}
	return nil
}

type SparseCsr struct {
	Values      []byte // in Tensor.dtype
	CrowIndices []byte // int64[]
	ColIndices  []byte // int64[]
}

func (x *SparseCsr) GetValues() []byte {
	if x != nil {
		return x.Values
	}
	return nil
}

func (x *SparseCsr) GetCrowIndices() []byte {
	if x != nil {
		return x.CrowIndices
	}
	return nil
}

func (x *SparseCsr) GetColIndices() []byte {
	if x != nil {
		return x.ColIndices
	}
	return nil
}

type ForwardBackwardOutput struct {
	LossFnOutputType string
	LossFnOutputs    []*ArrayRecord
	Metrics          map[string]float64
}

func (x *ForwardBackwardOutput) GetLossFnOutputType() string {
	if x != nil {
		return x.LossFnOutputType
	}
	return ""
}

func (x *ForwardBackwardOutput) GetLossFnOutputs() []*ArrayRecord {
	if x != nil {
		return x.LossFnOutputs
	}
	return nil
}

func (x *ForwardBackwardOutput) GetMetrics() map[string]float64 {
	if x != nil {
		return x.Metrics
	}
	return nil
}

type ArrayRecord struct {
	TypeTag   string
	Fields    map[string]*BatchedTensor
	NumDatums int64
}

func (x *ArrayRecord) GetTypeTag() string {
	if x != nil {
		return x.TypeTag
	}
	return ""
}

func (x *ArrayRecord) GetFields() map[string]*BatchedTensor {
	if x != nil {
		return x.Fields
	}
	return nil
}

func (x *ArrayRecord) GetNumDatums() int64 {
	if x != nil {
		return x.NumDatums
	}
	return 0
}

type BatchedTensor struct {
	Data          []byte
	Offsets       []byte // int64[num_datums+1], byte offsets into Data
	Dtype         DType
	TrailingShape []int64
}

func (x *BatchedTensor) GetData() []byte {
	if x != nil {
		return x.Data
	}
	return nil
}

func (x *BatchedTensor) GetOffsets() []byte {
	if x != nil {
		return x.Offsets
	}
	return nil
}

func (x *BatchedTensor) GetDtype() DType {
	if x != nil {
		return x.Dtype
	}
	return DType_DTYPE_UNSPECIFIED
}

func (x *BatchedTensor) GetTrailingShape() []int64 {
	if x != nil {
		return x.TrailingShape
	}
	return nil
}
