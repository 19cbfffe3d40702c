package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/store"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Sampler generates tokens; EngineSampler serves it from lib/engine, tests
// use fakes. See docs/protocol.md, "Sampling".
type Sampler interface {
	Sample(ctx context.Context, req SampleRequest) (*engine.SampleResponse, error)
}

// SampleRequest is one asample call resolved to weights: the engine's
// request plus the base model and, for a sampler checkpoint, the local
// directory of its PEFT adapter files. The engine's types are the one
// definition of a sampling request and result on the server side; the wire
// form is decoded here (asampleBody) and encoded in sampleresult.go.
type SampleRequest struct {
	BaseModel  string
	AdapterDir string // "" samples the base model
	engine.SampleRequest
}

func (s *Server) createSamplingSession(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	start := time.Now()
	var body struct {
		SessionID            string `json:"session_id"`
		SamplingSessionSeqID *int   `json:"sampling_session_seq_id"`
		BaseModel            string `json:"base_model"`
		ModelPath            string `json:"model_path"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if body.SamplingSessionSeqID == nil || *body.SamplingSessionSeqID < 0 {
		return errorf(http.StatusUnprocessableEntity, "sampling_session_seq_id is required (a per-session counter from 0)")
	}
	se, e := s.liveSession(owner, body.SessionID)
	if e != nil {
		return e
	}
	sp := store.Sampler{ID: fmt.Sprintf("%s:sample:%d", se.ID, *body.SamplingSessionSeqID), SessionID: se.ID, Owner: owner, CreatedAt: s.now()}
	switch {
	case body.ModelPath != "":
		_, run, e := s.samplerCheckpoint(owner, body.ModelPath)
		if e != nil {
			return e
		}
		sp.BaseModel, sp.ModelPath = run.BaseModel, body.ModelPath
	case body.BaseModel != "":
		arch, ok := models.Lookup(body.BaseModel)
		if !ok {
			return errorf(http.StatusBadRequest, "%v", models.NotInCatalog(body.BaseModel))
		}
		sp.BaseModel = arch.Name
	default:
		return errorf(http.StatusBadRequest, "either base_model or model_path is required")
	}
	if _, exists := s.st.Sampler(sp.ID); exists {
		return errorf(http.StatusConflict, "Sampling session %s already exists: use the next sampling_session_seq_id", sp.ID)
	}
	if err := s.st.CreateSampler(sp); err != nil {
		return storeFailure("create sampling session", err)
	}
	s.logRequest(se.ID, "create_sampling_session", start, 200, sp.ID)
	writeJSON(w, 200, map[string]string{"sampling_session_id": sp.ID, "type": "create_sampling_session"})
	return nil
}

func (s *Server) getSampler(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	sp, ok := s.st.Sampler(seg[1])
	if !ok || sp.Owner != owner {
		return errorf(http.StatusNotFound, "Sampler %s not found", seg[1])
	}
	out := map[string]any{"sampler_id": sp.ID, "base_model": sp.BaseModel}
	if sp.ModelPath != "" {
		out["model_path"] = sp.ModelPath
	}
	writeJSON(w, 200, out)
	return nil
}

// samplerCheckpoint finds the live sampler checkpoint a model_path names,
// owned by owner or public, and its run.
func (s *Server) samplerCheckpoint(owner, modelPath string) (store.Checkpoint, store.RunView, *errorResponse) {
	p, err := tinkerapi.ParsePath(modelPath)
	if err != nil {
		return store.Checkpoint{}, store.RunView{}, errorf(http.StatusBadRequest, "Invalid model_path %s: expected tinker://<run>/sampler_weights/<name>", modelPath)
	}
	if p.Kind != "sampler_weights" {
		return store.Checkpoint{}, store.RunView{}, errorf(http.StatusBadRequest, "%s is a training checkpoint (weights/...): save sampler weights (save_weights_for_sampler) and sample from the sampler_weights/... path", modelPath)
	}
	c, ok := s.st.Checkpoint(p.RunID, p.Kind, p.Name, s.now())
	if !ok || (c.Owner != owner && !c.Public) {
		return c, store.RunView{}, errorf(http.StatusNotFound, "Checkpoint %s not found", modelPath)
	}
	run, _ := s.st.Run(p.RunID, s.now())
	return c, run, nil
}

// asampleBody is an asample request as it comes over the wire. Pointers
// tell a missing field, which takes the SDK's default, from a zero.
type asampleBody struct {
	SamplingSessionID string `json:"sampling_session_id"`
	SeqID             *int   `json:"seq_id"`
	BaseModel         string `json:"base_model"`
	ModelPath         string `json:"model_path"`
	NumSamples        *int   `json:"num_samples"`
	Prompt            struct {
		Chunks []struct {
			Type   string `json:"type"`
			Tokens []int  `json:"tokens"`
		} `json:"chunks"`
	} `json:"prompt"`
	SamplingParams struct {
		MaxTokens   *int            `json:"max_tokens"`
		Seed        json.Number     `json:"seed"`
		Stop        json.RawMessage `json:"stop"`
		Temperature *float64        `json:"temperature"`
		TopK        *int            `json:"top_k"`
		TopP        *float64        `json:"top_p"`
	} `json:"sampling_params"`
	PromptLogprobs     bool `json:"prompt_logprobs"`
	TopKPromptLogprobs int  `json:"topk_prompt_logprobs"`
}

// asample is parsed, resolved to weights, then submitted as a future.
func (s *Server) asample(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	start := time.Now()
	var body asampleBody
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	release, e := s.futures.admit(owner)
	if e != nil {
		return e
	}
	defer release()
	er, e := body.engineRequest()
	if e != nil {
		return e
	}
	req := SampleRequest{SampleRequest: er}
	session, e := s.resolveSample(owner, &body, &req)
	if e != nil {
		return e
	}
	if e := checkSample(&req); e != nil {
		return e
	}
	return s.submitSample(w, r, owner, session, &body, req, start)
}

// engineRequest checks the sampling parameters and fills in the wire
// defaults: one sample of up to 16 tokens at temperature 1, no top-k or
// top-p limit.
func (b *asampleBody) engineRequest() (engine.SampleRequest, *errorResponse) {
	req := engine.SampleRequest{NumSamples: 1, MaxTokens: 16, Temperature: 1, TopK: -1, TopP: 1,
		PromptLogprobs: b.PromptLogprobs, TopKPromptLogprobs: b.TopKPromptLogprobs}
	v := b.SamplingParams
	if v.Seed != "" {
		seed, err := foldSeed(string(v.Seed))
		if err != nil {
			return req, errorf(http.StatusUnprocessableEntity, "sampling_params.seed must be an integer, got %s", v.Seed)
		}
		req.Seed = &seed
	}
	n := 0
	for _, ch := range b.Prompt.Chunks {
		if ch.Type != "" && ch.Type != "encoded_text" {
			return req, errorf(http.StatusBadRequest, "prompt chunk type %q is not supported by the local server (only encoded_text)", ch.Type)
		}
		n += len(ch.Tokens)
	}
	if e := checkInt("prompt length in tokens", int64(n), 0, maxPromptTokens); e != nil {
		return req, e
	}
	req.Prompt = make([]int, 0, n)
	for _, ch := range b.Prompt.Chunks {
		req.Prompt = append(req.Prompt, ch.Tokens...)
	}
	setIf(&req.NumSamples, b.NumSamples)
	setIf(&req.MaxTokens, v.MaxTokens)
	setIf(&req.Temperature, v.Temperature)
	setIf(&req.TopK, v.TopK)
	setIf(&req.TopP, v.TopP)
	if len(v.Stop) > 0 && string(v.Stop) != "null" {
		var one string
		if json.Unmarshal(v.Stop, &one) == nil {
			req.StopStrings = []string{one}
		} else if json.Unmarshal(v.Stop, &req.StopStrings) != nil {
			if json.Unmarshal(v.Stop, &req.StopTokens) != nil {
				return req, errorf(http.StatusUnprocessableEntity, "sampling_params.stop must be a string, a list of strings or a list of token ids")
			}
		}
	}
	for _, c := range []struct {
		field     string
		v, lo, hi int64
	}{
		{"num_samples", int64(req.NumSamples), 1, maxNumSamples},
		{"sampling_params.max_tokens", int64(req.MaxTokens), 0, maxMaxTokens},
		{"topk_prompt_logprobs", int64(req.TopKPromptLogprobs), 0, maxTopKLogprobs},
		{"sampling_params.stop (entries)", int64(len(req.StopStrings) + len(req.StopTokens)), 0, maxStopSequences},
	} {
		if e := checkInt(c.field, c.v, c.lo, c.hi); e != nil {
			return req, e
		}
	}
	for _, s := range req.StopStrings {
		if len(s) > maxStringLen {
			return req, errorf(http.StatusBadRequest, "sampling_params.stop entries must be at most %d bytes", maxStringLen)
		}
	}
	return req, nil
}

// checkSample rejects, before any work is queued, requests the model
// cannot serve: they are the caller's mistakes (400), not a failed future.
func checkSample(req *SampleRequest) *errorResponse {
	switch {
	case len(req.Prompt) == 0:
		return errorf(http.StatusBadRequest, "prompt is empty: give at least one token")
	case req.Temperature < 0:
		return errorf(http.StatusBadRequest, "sampling_params.temperature must be >= 0, got %v", req.Temperature)
	case req.TopP <= 0 || req.TopP > 1:
		return errorf(http.StatusBadRequest, "sampling_params.top_p must be in (0, 1], got %v", req.TopP)
	case req.TopK < -1:
		return errorf(http.StatusBadRequest, "sampling_params.top_k must be -1 (no limit) or positive, got %d", req.TopK)
	}
	arch, ok := models.Lookup(req.BaseModel)
	if !ok {
		return nil // the sampler reports models it does not know
	}
	for i, t := range req.Prompt {
		if t < 0 || t >= arch.VocabSize {
			return errorf(http.StatusBadRequest, "prompt token %d (at position %d) is outside %s's vocabulary (0..%d)", t, i, arch.Name, arch.VocabSize-1)
		}
	}
	if len(req.Prompt)+req.MaxTokens > arch.MaxPositionEmbeddings {
		return errorf(http.StatusBadRequest, "prompt (%d tokens) + max_tokens (%d) exceeds %s's context of %d tokens", len(req.Prompt), req.MaxTokens, arch.Name, arch.MaxPositionEmbeddings)
	}
	return nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// resolveSample finds the weights to sample: the sampling session's, or a
// base model or sampler checkpoint named in the request itself. A
// checkpoint's adapter files are written now if they were not yet, before
// the engine reads them. It returns the session to log and bill against
// ("" without a sampling session).
func (s *Server) resolveSample(owner string, b *asampleBody, req *SampleRequest) (session string, e *errorResponse) {
	modelPath := ""
	switch {
	case b.SamplingSessionID != "":
		sp, ok := s.st.Sampler(b.SamplingSessionID)
		if !ok || sp.Owner != owner {
			return "", errorf(http.StatusNotFound, "Sampling session %s not found", b.SamplingSessionID)
		}
		req.BaseModel, modelPath, session = sp.BaseModel, sp.ModelPath, sp.SessionID
	case b.ModelPath != "" || b.BaseModel != "":
		req.BaseModel, modelPath = b.BaseModel, b.ModelPath
	default:
		return "", errorf(http.StatusBadRequest, "sampling_session_id (or base_model / model_path) is required")
	}
	if modelPath == "" {
		// A sampler saved from a trained model without a path has its
		// adapter in its own directory.
		if dir := s.ephemeralDir(b.SamplingSessionID); b.SamplingSessionID != "" && s.archives.ready(dir) {
			req.AdapterDir = dir
		}
		return session, nil
	}
	c, run, e := s.samplerCheckpoint(owner, modelPath)
	if e != nil {
		return "", e
	}
	req.BaseModel = run.BaseModel
	req.AdapterDir = s.checkpointDir(c.RunID, c.Kind, c.Name)
	if err := s.archives.materialise(c, false); err != nil {
		return "", storeFailure("prepare adapter", err)
	}
	return session, nil
}

// submitSample applies backpressure, then runs the sample as a future that
// logs the request and records the tokens for billing.
func (s *Server) submitSample(w http.ResponseWriter, r *http.Request, owner, session string, b *asampleBody, req SampleRequest, start time.Time) *errorResponse {
	if s.samples.Load() >= int64(s.opts.MaxPendingSamples) && r.Header.Get("X-Tinker-Sampling-Backpressure") == "1" {
		w.Header().Set("Retry-After", "1")
		return errorf(http.StatusTooManyRequests, "Sampling backpressure: %d requests in flight; retry shortly", s.samples.Load())
	}
	s.samples.Add(1)
	sampler := s.opts.Sampler
	caller, cancel := context.WithCancel(s.workContext(session)) // done when the caller goes
	f := s.startFutureWith(owner, futureOpts{session: session, cancel: cancel}, func() ([]byte, []byte, error) {
		defer s.samples.Add(-1)
		ctx, stop := eitherDone(s.ctx, caller) // or when the server closes
		defer stop()
		if sampler == nil {
			s.logRequest(session, "sample", start, 400, "no sampling engine")
			return nil, nil, userErrorf("sampling is not available: this local server was started without a sampling engine")
		}
		resp, err := sampler.Sample(ctx, req)
		if err != nil {
			err = s.cancelled(caller, "sample", err)
			s.logRequest(session, "sample", start, 500, err.Error())
			return nil, nil, err
		}
		var gen int64
		for _, sq := range resp.Sequences {
			gen += int64(len(sq.Tokens))
		}
		now := s.now()
		if session != "" {
			s.st.RecordUsage(store.UsageEvent{At: now, Owner: owner, SessionID: session, BaseModel: req.BaseModel, Type: "sampling_prefill", TokenCount: int64(len(req.Prompt))})
			s.st.RecordUsage(store.UsageEvent{At: now, Owner: owner, SessionID: session, BaseModel: req.BaseModel, Type: "sampling_sample", TokenCount: gen})
		}
		s.logRequest(session, "sample", start, 200, fmt.Sprintf("%d prompt tokens, %d generated", len(req.Prompt), gen))
		js := sampleJSON(resp)
		if js == nil { // NaN or ±Inf logprobs: JSON cannot carry them
			return nil, nil, nonFiniteError("sample", req.BaseModel, "a log-probability of the result")
		}
		return js, sampleProto(resp), nil
	})
	// Newer SDKs expect one id per requested sample on the promise.
	ids := make([]string, req.NumSamples)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s:%d", f.id, i)
	}
	writeJSON(w, 200, map[string]any{"request_id": f.id, "sample_sequence_ids": ids})
	return nil
}
