package tinkerapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/tinkershell/tinker/lib/tinkerproto"
)

// SampleRequest is one sampling call (docs/protocol.md, "Sampling"). Zero values are sent
// as they are (temperature 0 is greedy), but NumSamples must be at least 1;
// NewSampleRequest gives the SDK's defaults.
type SampleRequest struct {
	PromptTokens          []int
	NumSamples, MaxTokens int
	Temperature, TopP     float64
	TopK                  int // -1: no limit
	Seed                  *int64
	// At most one of StopStrings and StopTokens.
	StopStrings []string
	StopTokens  []int
	// PromptLogprobs asks for the logprob of each prompt token;
	// TopKPromptLogprobs > 0 also for the k likeliest tokens at each
	// prompt position.
	PromptLogprobs     bool
	TopKPromptLogprobs int
}

// NewSampleRequest returns a request for prompt with the SDK's defaults:
// one sample of up to 64 tokens at temperature 1, no top-k or top-p limit.
func NewSampleRequest(prompt []int) SampleRequest {
	return SampleRequest{PromptTokens: prompt, NumSamples: 1, MaxTokens: 64, Temperature: 1, TopP: 1, TopK: -1}
}

// SampleResponse is a decoded sampling result.
type SampleResponse struct {
	Sequences []SampledSequence
	// PromptLogprobs has one entry per prompt token when asked for; nil
	// entries were not computed (the first token has no logprob).
	PromptLogprobs []*float32
	// TopKPromptLogprobs has one row per prompt position when asked for;
	// a nil row has no candidates.
	TopKPromptLogprobs   [][]TopKLogprob
	PromptCacheHitTokens int
}

// SampledSequence is one generated sequence.
type SampledSequence struct {
	Tokens     []int
	Logprobs   []float32 // one per token, or nil when the server sent none
	StopReason string    // "stop" (a stop sequence or end token) | "length" (max_tokens)
}

// TopKLogprob is one candidate token at a prompt position.
type TopKLogprob struct {
	Token   int
	Logprob float32
}

// CreateSamplingSession binds a sampler to the session: a base model, or a
// tinker://…/sampler_weights/… checkpoint (modelPath wins when both are
// given). It returns the sampling session id that Sample takes.
func (s *Session) CreateSamplingSession(ctx context.Context, baseModel, modelPath string) (string, error) {
	if err := s.checkOpen(); err != nil {
		return "", err
	}
	if modelPath != "" {
		if err := checkSamplerPath(modelPath); err != nil {
			return "", err
		}
	} else if baseModel == "" {
		return "", errors.New("create sampling session: give a base model or a tinker:// sampler path")
	}
	req := struct {
		SessionID            string `json:"session_id"`
		SamplingSessionSeqID int64  `json:"sampling_session_seq_id"`
		BaseModel            string `json:"base_model,omitempty"`
		ModelPath            string `json:"model_path,omitempty"`
		Type                 string `json:"type"`
	}{s.id, s.samplingSeq.Add(1) - 1, baseModel, modelPath, "create_sampling_session"}
	var resp struct {
		SamplingSessionID string `json:"sampling_session_id"`
	}
	err := s.c.Do(ctx, http.MethodPost, "/api/v1/create_sampling_session", req, &resp,
		WithValidator(requireFields("sampling_session_id")))
	if err != nil {
		what := baseModel
		if modelPath != "" {
			what = modelPath
		}
		return "", fmt.Errorf("create sampling session for %s: %w", what, err)
	}
	return resp.SamplingSessionID, nil
}

// checkSamplerPath accepts tinker://<run>/sampler_weights/<name> only.
func checkSamplerPath(p string) error {
	tp, err := ParsePath(p)
	if err != nil {
		return fmt.Errorf("invalid model path %q: want tinker://<run>/sampler_weights/<name>", p)
	}
	if tp.Kind != "sampler_weights" {
		return fmt.Errorf("%s is a training checkpoint: save sampler weights first (save_weights_for_sampler) and sample the sampler_weights/ path", p)
	}
	return nil
}

// largePrompt is where the SDK's backpressure wait grows fivefold
// (prompts estimated at 10 bytes per token).
const largePrompt = 128 << 10

// Sample submits an asample on a sampling session and waits for the
// result, fetched as protobuf (the legacy JSON form is accepted too).
// A 429 answer to the submission is the server's backpressure: the call
// waits (1 s, 5 s for prompts over 128 KiB) and submits again. Connection
// errors, 408/409/5xx answers and expired futures are retried with a new
// seq_id within Config.MaxRetryTime; a failed sample (*RequestFailedError)
// is not.
func (s *Session) Sample(ctx context.Context, samplingSessionID string, req SampleRequest) (*SampleResponse, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if samplingSessionID == "" {
		return nil, errors.New("sample: sampling session id is empty")
	}
	wire, err := req.wire(samplingSessionID)
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		wire.SeqID = s.nextSampleSeq(samplingSessionID)
		res, err := s.sampleOnce(ctx, &wire)
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil || !retryableSample(err) {
			return nil, fmt.Errorf("sample on %s: %w", samplingSessionID, err)
		}
		delay := s.c.backoff(attempt)
		if time.Since(start)+delay > s.c.cfg.MaxRetryTime {
			return nil, fmt.Errorf("sample on %s: giving up after %d attempts: %w", samplingSessionID, attempt+1, err)
		}
		s.c.logf("sample on %s: %v; retrying in %s", samplingSessionID, err, delay.Round(time.Millisecond))
		s.state(State{Kind: "Sample", Status: StatusRetrying, Reason: "retrying after an error", Elapsed: time.Since(start)})
		if err := s.c.cfg.Sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("sample on %s: %w", samplingSessionID, err)
		}
	}
}

func (s *Session) state(st State) {
	if s.opts.OnState != nil {
		s.opts.OnState(st)
	}
}

// sampleOnce submits (waiting out backpressure) and awaits one sample.
func (s *Session) sampleOnce(ctx context.Context, wire *sampleWire) (*SampleResponse, error) {
	t := s.opts.Timings.withDefaults()
	wait := t.Backpressure
	if 10*len(wire.Prompt.Chunks[0].Tokens) > largePrompt {
		wait *= 5
	}
	var firstBill time.Time
	for {
		submitted := time.Now()
		h, err := s.c.holderRetry(ctx, "asample", func() (futureHandle, error) {
			return s.submit(ctx, "/api/v1/asample", wire, WithoutRetries(), WithHeader("X-Tinker-Sampling-Backpressure", "1"))
		})
		var apiErr *APIError
		if err != nil && errors.As(err, &apiErr) && ctx.Err() == nil {
			d, reason := time.Duration(0), ""
			switch apiErr.Status {
			case http.StatusTooManyRequests:
				d, reason = wait, "sampler busy, resubmitting"
			case http.StatusPaymentRequired:
				if firstBill.IsZero() {
					firstBill = time.Now()
				}
				if time.Since(firstBill) < t.BillingMax {
					d, reason = t.BillingPause, "billing hold (402)"
				}
			}
			if d > 0 {
				s.state(State{Kind: "Sample", Status: StatusPaused, Reason: reason})
				if err := s.c.cfg.Sleep(ctx, d); err != nil {
					return nil, err
				}
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		var raw FutureResult
		if err := s.await(ctx, h, "Sample", submitted, &raw, true); err != nil {
			return nil, err
		}
		if raw.Proto {
			return DecodeSampleProto(raw.Body)
		}
		return DecodeSampleJSON(raw.Body)
	}
}

// holderMaxWait bounds the submission retries of holderRetry, as the
// SDK's holder bounds them (300 s from the first attempt).
const holderMaxWait = 300 * time.Second

// holderRetry is the SDK's outer retry of a submission that its HTTP layer
// does not retry (asample): after a connection error, a timeout or a
// 408/409/5xx it waits min(2^n, 30) s and sends the same body again, with
// a new idempotency key, for up to 300 s. A 429 or 402 is the caller's to
// handle (backpressure, billing), as are other errors.
func (c *Client) holderRetry(ctx context.Context, what string, submit func() (futureHandle, error)) (futureHandle, error) {
	start, waited := time.Now(), time.Duration(0)
	for n := 0; ; n++ {
		h, err := submit()
		var apiErr *APIError
		backpressure := errors.As(err, &apiErr) && (apiErr.Status == http.StatusTooManyRequests || apiErr.Status == http.StatusPaymentRequired)
		var te *TransportError
		// Nothing listening is retried briefly, as by the generic layer.
		refused := errors.As(err, &te) && te.Unreachable && n < maxRefusedRetries
		if err == nil || backpressure || ctx.Err() != nil || !(refused || retryableSample(err)) {
			return h, err
		}
		wait := min(time.Second<<min(n, 5), 30*time.Second)
		// Bounded by the waits too, so a Config.Sleep that records them
		// instead of sleeping still ends.
		if left := holderMaxWait - max(time.Since(start), waited); left <= 0 {
			return h, err
		} else if wait > left {
			wait = left
		}
		waited += wait
		c.logf("%s: %v; submitting again in %s", what, err, wait)
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return h, err
		}
	}
}

// retryableSample mirrors the SDK's sampling retry handler: connection
// errors, timeouts, expired futures and retryable statuses.
func retryableSample(err error) bool {
	if errors.Is(err, ErrServerGone) {
		return false
	}
	var te *TransportError
	if errors.As(err, &te) {
		return !te.Permanent && !te.Unreachable // the inner layers retried a refused connection
	}
	if errors.Is(err, ErrFutureExpired) {
		return true
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return retryableStatus(apiErr.Status)
	}
	return false
}

type sampleWire struct {
	NumSamples int `json:"num_samples"`
	Prompt     struct {
		Chunks []encodedText `json:"chunks"`
	} `json:"prompt"`
	SamplingParams     samplingParams `json:"sampling_params"`
	SamplingSessionID  string         `json:"sampling_session_id"`
	SeqID              int64          `json:"seq_id"`
	PromptLogprobs     bool           `json:"prompt_logprobs"`
	TopKPromptLogprobs int            `json:"topk_prompt_logprobs"`
	Type               string         `json:"type"`
}

type encodedText struct {
	Tokens []int  `json:"tokens"`
	Type   string `json:"type"`
}

type samplingParams struct {
	MaxTokens   int       `json:"max_tokens"`
	Seed        *int64    `json:"seed,omitempty"`
	Stop        any       `json:"stop,omitempty"` // []string or []int
	Temperature wireFloat `json:"temperature"`
	TopK        int       `json:"top_k"`
	TopP        wireFloat `json:"top_p"`
}

func (r SampleRequest) wire(samplingSessionID string) (sampleWire, error) {
	var w sampleWire
	switch {
	case len(r.PromptTokens) == 0:
		return w, errors.New("the prompt has no tokens")
	case r.NumSamples < 1:
		return w, fmt.Errorf("num_samples must be at least 1, got %d", r.NumSamples)
	case r.MaxTokens < 0:
		return w, fmt.Errorf("max_tokens must not be negative, got %d", r.MaxTokens)
	case r.Temperature < 0 || math.IsNaN(r.Temperature) || math.IsInf(r.Temperature, 0):
		return w, fmt.Errorf("temperature must be a finite number, at least 0, got %v", r.Temperature)
	case r.TopP < 0 || r.TopP > 1 || math.IsNaN(r.TopP):
		return w, fmt.Errorf("top_p must be between 0 and 1, got %v", r.TopP)
	case len(r.StopStrings) > 0 && len(r.StopTokens) > 0:
		return w, errors.New("give stop strings or stop token ids, not both")
	case r.TopKPromptLogprobs < 0:
		return w, fmt.Errorf("topk_prompt_logprobs must not be negative, got %d", r.TopKPromptLogprobs)
	}
	w.NumSamples = r.NumSamples
	w.Prompt.Chunks = []encodedText{{Tokens: r.PromptTokens, Type: "encoded_text"}}
	w.SamplingParams = samplingParams{MaxTokens: r.MaxTokens, Seed: r.Seed, Temperature: wireFloat(r.Temperature), TopK: r.TopK, TopP: wireFloat(r.TopP)}
	if len(r.StopStrings) > 0 {
		w.SamplingParams.Stop = r.StopStrings
	} else if len(r.StopTokens) > 0 {
		w.SamplingParams.Stop = r.StopTokens
	}
	w.SamplingSessionID = samplingSessionID
	w.PromptLogprobs = r.PromptLogprobs
	w.TopKPromptLogprobs = r.TopKPromptLogprobs
	w.Type = "sample"
	return w, nil
}

// DecodeSampleProto decodes a tinker_public.SampleResponse
// (docs/protocol.md, "Protobuf bodies"):
// NaN prompt logprobs become nil, top-k rows starting with the padding cell
// become nil and trailing padding is trimmed, and an unknown stop reason
// is an error.
func DecodeSampleProto(b []byte) (*SampleResponse, error) {
	var m tinkerproto.SampleResponse
	if err := tinkerproto.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode sample result: %w", err)
	}
	out := &SampleResponse{PromptCacheHitTokens: int(m.GetPromptCacheHitTokens())}
	for i, sq := range m.GetSequences() {
		var reason string
		switch sq.GetStopReason() {
		case tinkerproto.StopReason_STOP_REASON_STOP:
			reason = "stop"
		case tinkerproto.StopReason_STOP_REASON_LENGTH:
			reason = "length"
		default:
			return nil, fmt.Errorf("decode sample result: sequence %d has unknown stop reason %d", i, sq.GetStopReason())
		}
		toks, err := tinkerproto.UnpackInt32(sq.GetTokens())
		if err != nil {
			return nil, fmt.Errorf("decode sample result: sequence %d tokens: %w", i, err)
		}
		seq := SampledSequence{Tokens: toks, StopReason: reason}
		if sq.Logprobs != nil {
			if seq.Logprobs, err = tinkerproto.UnpackFloat32(sq.Logprobs); err != nil {
				return nil, fmt.Errorf("decode sample result: sequence %d logprobs: %w", i, err)
			}
			if len(seq.Logprobs) != len(toks) {
				return nil, fmt.Errorf("decode sample result: sequence %d has %d logprobs for %d tokens", i, len(seq.Logprobs), len(toks))
			}
		}
		out.Sequences = append(out.Sequences, seq)
	}
	if m.PromptLogprobs != nil {
		vals, err := tinkerproto.UnpackFloat32(m.PromptLogprobs)
		if err != nil {
			return nil, fmt.Errorf("decode sample result: prompt logprobs: %w", err)
		}
		out.PromptLogprobs = make([]*float32, len(vals))
		for i := range vals {
			if !math.IsNaN(float64(vals[i])) {
				out.PromptLogprobs[i] = &vals[i]
			}
		}
	}
	if tk := m.GetTopkPromptLogprobs(); tk != nil {
		rows, err := decodeTopK(tk)
		if err != nil {
			return nil, fmt.Errorf("decode sample result: top-k prompt logprobs: %w", err)
		}
		out.TopKPromptLogprobs = rows
	}
	return out, nil
}

func decodeTopK(tk *tinkerproto.TopkPromptLogprobs) ([][]TopKLogprob, error) {
	ids, err := tinkerproto.UnpackInt32(tk.GetTokenIds())
	if err != nil {
		return nil, err
	}
	lps, err := tinkerproto.UnpackFloat32(tk.GetLogprobs())
	if err != nil {
		return nil, err
	}
	n, k := int(tk.GetPromptLength()), int(tk.GetK())
	if len(ids) != n*k || len(lps) != n*k {
		return nil, fmt.Errorf("%d token ids and %d logprobs for %d positions × %d", len(ids), len(lps), n, k)
	}
	pad := func(j int) bool { return ids[j] == 0 && lps[j] == tinkerproto.TopKPadLogprob }
	rows := make([][]TopKLogprob, n)
	for i := range rows {
		lo, hi := i*k, (i+1)*k
		if k == 0 || pad(lo) {
			continue
		}
		for hi > lo && pad(hi-1) {
			hi--
		}
		row := make([]TopKLogprob, 0, hi-lo)
		for j := lo; j < hi; j++ {
			row = append(row, TopKLogprob{Token: ids[j], Logprob: lps[j]})
		}
		rows[i] = row
	}
	return rows, nil
}

// DecodeSampleJSON decodes the legacy JSON form of a sample result.
func DecodeSampleJSON(b []byte) (*SampleResponse, error) {
	if err := requireFields("sequences")(b); err != nil {
		return nil, fmt.Errorf("decode sample result: %w", err)
	}
	var w struct {
		Sequences []struct {
			StopReason string    `json:"stop_reason"`
			Tokens     []int     `json:"tokens"`
			Logprobs   []float32 `json:"logprobs"`
		} `json:"sequences"`
		PromptLogprobs       []*float32     `json:"prompt_logprobs"`
		TopK                 [][][2]float64 `json:"topk_prompt_logprobs"`
		PromptCacheHitTokens int            `json:"prompt_cache_hit_tokens"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("decode sample result: %w", &SchemaError{Path: "/api/v1/retrieve_future", Reason: err.Error()})
	}
	out := &SampleResponse{PromptLogprobs: w.PromptLogprobs, PromptCacheHitTokens: w.PromptCacheHitTokens}
	for i, sq := range w.Sequences {
		if sq.StopReason != "stop" && sq.StopReason != "length" {
			return nil, fmt.Errorf("decode sample result: sequence %d has unknown stop reason %q", i, sq.StopReason)
		}
		if sq.Logprobs != nil && len(sq.Logprobs) != len(sq.Tokens) {
			return nil, fmt.Errorf("decode sample result: sequence %d has %d logprobs for %d tokens", i, len(sq.Logprobs), len(sq.Tokens))
		}
		out.Sequences = append(out.Sequences, SampledSequence{Tokens: sq.Tokens, Logprobs: sq.Logprobs, StopReason: sq.StopReason})
	}
	if w.TopK != nil {
		out.TopKPromptLogprobs = make([][]TopKLogprob, len(w.TopK))
		for i, row := range w.TopK {
			if row == nil {
				continue
			}
			out.TopKPromptLogprobs[i] = make([]TopKLogprob, len(row))
			for j, cell := range row {
				out.TopKPromptLogprobs[i][j] = TopKLogprob{Token: int(cell[0]), Logprob: float32(cell[1])}
			}
		}
	}
	return out, nil
}
