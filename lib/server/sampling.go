package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/store"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Sampler generates tokens; lib/engine implements it. The server resolves
// the sampling session to a base model and, for a tinker:// path, a local
// directory holding the PEFT adapter files.
type Sampler interface {
	Sample(ctx context.Context, req SampleRequest) (*SampleResponse, error)
}

// SampleRequest is one asample call, resolved.
type SampleRequest struct {
	BaseModel          string
	ModelPath          string // tinker:// path, "" for the base model
	AdapterDir         string // local PEFT directory for ModelPath
	Prompt             []int
	NumSamples         int
	MaxTokens          int
	Temperature        float64
	TopK               int
	TopP               float64
	Seed               *int64
	StopTokens         []int
	StopStrings        []string
	PromptLogprobs     bool
	TopKPromptLogprobs int
}

// SampledSequence is one generated sequence.
type SampledSequence struct {
	Tokens     []int
	Logprobs   []float32
	StopReason string // "stop" | "length"
}

// TopKEntry is one (token, logprob) candidate at a prompt position.
type TopKEntry struct {
	Token   int
	Logprob float32
}

// SampleResponse is what a Sampler returns.
type SampleResponse struct {
	Sequences          []SampledSequence
	PromptLogprobs     []*float32    // first entry nil
	TopKPromptLogprobs [][]TopKEntry // per prompt position, nil = none
}

func (s *Server) createSamplingSession(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
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
		p, err := tinkerapi.ParsePath(body.ModelPath)
		if err != nil {
			return errorf(http.StatusBadRequest, "Invalid model_path %s: expected tinker://<run>/sampler_weights/<name>", body.ModelPath)
		}
		if p.Kind != "sampler_weights" {
			return errorf(http.StatusBadRequest, notSamplerPath, body.ModelPath)
		}
		c, ok := s.st.Checkpoint(p.RunID, p.Kind, p.Name, s.now())
		if !ok || (c.Owner != owner && !c.Public) {
			return errorf(http.StatusNotFound, "Checkpoint %s not found", body.ModelPath)
		}
		run, _ := s.st.Run(p.RunID, s.now())
		sp.BaseModel, sp.ModelPath = run.BaseModel, body.ModelPath
	case body.BaseModel != "":
		arch, ok := models.Lookup(body.BaseModel)
		if !ok {
			return errorf(http.StatusBadRequest, "Unknown base model %q; see get_server_capabilities for the supported models", body.BaseModel)
		}
		sp.BaseModel = arch.Name
	default:
		return errorf(http.StatusBadRequest, "either base_model or model_path is required")
	}
	if _, exists := s.st.Sampler(sp.ID); exists {
		return errorf(http.StatusConflict, "Sampling session %s already exists: use the next sampling_session_seq_id", sp.ID)
	}
	if err := s.st.CreateSampler(sp); err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	s.logRequest(se.ID, "create_sampling_session", start, 200, sp.ID)
	writeJSON(w, 200, map[string]string{"sampling_session_id": sp.ID, "type": "create_sampling_session"})
	return nil
}
func (s *Server) getSampler(w http.ResponseWriter, r *http.Request, owner string, seg []string) *apiError {
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

const notSamplerPath = "%s is a training checkpoint (weights/...): save sampler weights (save_weights_for_sampler) and sample from the sampler_weights/... path"

func (s *Server) asample(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	start := time.Now()
	var body struct {
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
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	req := SampleRequest{NumSamples: 1, MaxTokens: 16, Temperature: 1, TopK: -1, TopP: 1,
		PromptLogprobs: body.PromptLogprobs, TopKPromptLogprobs: body.TopKPromptLogprobs}
	if sd := body.SamplingParams.Seed; sd != "" {
		seed, err := foldSeed(string(sd))
		if err != nil {
			return errorf(http.StatusUnprocessableEntity, "sampling_params.seed must be an integer, got %s", sd)
		}
		req.Seed = &seed
	}
	session := ""
	switch {
	case body.SamplingSessionID != "":
		sp, ok := s.st.Sampler(body.SamplingSessionID)
		if !ok || sp.Owner != owner {
			return errorf(http.StatusNotFound, "Sampling session %s not found", body.SamplingSessionID)
		}
		req.BaseModel, req.ModelPath, session = sp.BaseModel, sp.ModelPath, sp.SessionID
	case body.ModelPath != "" || body.BaseModel != "":
		req.BaseModel, req.ModelPath = body.BaseModel, body.ModelPath
	default:
		return errorf(http.StatusBadRequest, "sampling_session_id (or base_model / model_path) is required")
	}
	if req.ModelPath != "" {
		p, err := tinkerapi.ParsePath(req.ModelPath)
		if err != nil {
			return errorf(http.StatusBadRequest, "Invalid model_path %s", req.ModelPath)
		}
		if p.Kind != "sampler_weights" {
			return errorf(http.StatusBadRequest, notSamplerPath, req.ModelPath)
		}
		c, ok := s.st.Checkpoint(p.RunID, p.Kind, p.Name, s.now())
		if !ok || (c.Owner != owner && !c.Public) {
			return errorf(http.StatusNotFound, "Checkpoint %s not found", req.ModelPath)
		}
		run, _ := s.st.Run(p.RunID, s.now())
		req.BaseModel = run.BaseModel
		req.AdapterDir = s.checkpointDir(p.RunID, p.Kind, p.Name)
		// Make sure the adapter files exist before the engine reads them.
		if err := s.archives.materialise(c, false); err != nil {
			return errorf(http.StatusInternalServerError, "prepare adapter: %v", err)
		}
	}
	for _, ch := range body.Prompt.Chunks {
		if ch.Type != "" && ch.Type != "encoded_text" {
			return errorf(http.StatusBadRequest, "prompt chunk type %q is not supported by the local server (only encoded_text)", ch.Type)
		}
		req.Prompt = append(req.Prompt, ch.Tokens...)
	}
	if body.NumSamples != nil {
		req.NumSamples = *body.NumSamples
	}
	v := body.SamplingParams
	if v.MaxTokens != nil {
		req.MaxTokens = *v.MaxTokens
	}
	if v.Temperature != nil {
		req.Temperature = *v.Temperature
	}
	if v.TopK != nil {
		req.TopK = *v.TopK
	}
	if v.TopP != nil {
		req.TopP = *v.TopP
	}
	if len(v.Stop) > 0 && string(v.Stop) != "null" {
		var one string
		if json.Unmarshal(v.Stop, &one) == nil {
			req.StopStrings = []string{one}
		} else if json.Unmarshal(v.Stop, &req.StopStrings) != nil {
			if json.Unmarshal(v.Stop, &req.StopTokens) != nil {
				return errorf(http.StatusUnprocessableEntity, "sampling_params.stop must be a string, a list of strings or a list of token ids")
			}
		}
	}
	if req.NumSamples < 1 || req.MaxTokens < 0 {
		return errorf(http.StatusBadRequest, "num_samples must be >= 1 and max_tokens >= 0")
	}
	seq := 0
	if body.SeqID != nil {
		seq = *body.SeqID
	}
	base := body.SamplingSessionID
	if base == "" {
		base = "sample"
	}
	if s.samples.Load() >= int64(s.opts.MaxPendingSamples) && r.Header.Get("X-Tinker-Sampling-Backpressure") == "1" {
		w.Header().Set("Retry-After", "1")
		return errorf(http.StatusTooManyRequests, "Sampling backpressure: %d requests in flight; retry shortly", s.samples.Load())
	}
	s.samples.Add(1)
	sampler := s.opts.Sampler
	f := s.newFuture(fmt.Sprintf("%s:%d", base, seq), func() ([]byte, []byte, error) {
		defer s.samples.Add(-1)
		if sampler == nil {
			s.logRequest(session, "sample", start, 400, "no sampling engine")
			return nil, nil, userErrorf("sampling is not available: this local server was started without a sampling engine")
		}
		resp, err := sampler.Sample(s.ctx, req)
		if err != nil {
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
		return sampleJSON(resp), sampleProto(resp), nil
	})
	// Newer SDKs expect one id per requested sample on the promise.
	ids := make([]string, req.NumSamples)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s:%d", f.id, i)
	}
	writeJSON(w, 200, map[string]any{"request_id": f.id, "sample_sequence_ids": ids})
	return nil
}
