package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protowire"

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

// ---- futures --------------------------------------------------------------

type future struct {
	id        string
	readyAt   time.Time // wall clock: results are held back until then
	done      chan struct{}
	result    []byte // JSON result (nil when proto is set and asked for)
	proto     []byte // protobuf result for sample futures
	failure   []byte // {"error","category"} JSON
	sentMeta  bool
	createdAt time.Time
}

type futureTable struct {
	wg   sync.WaitGroup // running work, waited for by Close
	mu   sync.Mutex
	m    map[string]*future
	seqs map[string]int
}

func newFutureTable() *futureTable {
	return &futureTable{m: map[string]*future{}, seqs: map[string]int{}}
}

// newFuture registers a future and runs work in the background. work
// returns the JSON result, an optional protobuf form, or an error whose
// category comes from userError.
func (s *Server) newFuture(base string, work func() (json []byte, proto []byte, err error)) *future {
	t := s.futures
	t.mu.Lock()
	id := base
	for n := 1; t.m[id] != nil; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	f := &future{id: id, readyAt: time.Now().Add(s.opts.FutureDelay), done: make(chan struct{}), createdAt: time.Now()}
	t.m[id] = f
	// Forget futures nobody collected for an hour.
	for k, old := range t.m {
		if time.Since(old.createdAt) > time.Hour {
			delete(t.m, k)
		}
	}
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		res, pb, err := work()
		if err != nil {
			cat := "server"
			var ue userError
			if errors.As(err, &ue) {
				cat = "user"
			}
			f.failure, _ = json.Marshal(map[string]string{"error": err.Error(), "category": cat})
		} else {
			f.result, f.proto = res, pb
		}
		close(f.done)
	}()
	return f
}

// busyQueue is how many unfinished earlier requests make a poll report
// paused_capacity instead of active.
const busyQueue = 8

// pendingBefore counts unfinished futures submitted before f.
func (t *futureTable) pendingBefore(f *future) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, o := range t.m {
		if o == f || !o.createdAt.Before(f.createdAt) {
			continue
		}
		select {
		case <-o.done:
			if time.Now().Before(o.readyAt) {
				n++
			}
		default:
			n++
		}
	}
	return n
}

type userError struct{ msg string }

func (e userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error { return userError{fmt.Sprintf(format, args...)} }

func (s *Server) retrieveFuture(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	var body struct {
		RequestID         string `json:"request_id"`
		AllowMetadataOnly bool   `json:"allow_metadata_only"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	s.futures.mu.Lock()
	f := s.futures.m[body.RequestID]
	s.futures.mu.Unlock()
	if f == nil {
		// Futures live in memory: after a restart (or an hour unclaimed) the
		// promise is gone, and 410 tells clients to resubmit the request.
		return errorf(http.StatusGone, "Future %s expired or unknown; resubmit the request", body.RequestID)
	}
	hold := time.NewTimer(s.opts.PollHold)
	defer hold.Stop()
	wait := func(ch <-chan time.Time) bool {
		select {
		case <-ch:
			return true
		case <-hold.C:
			return false
		case <-r.Context().Done():
			return false
		}
	}
	ready := true
	select {
	case <-f.done:
	default:
		ready = false
		select {
		case <-f.done:
			ready = true
		case <-hold.C:
		case <-r.Context().Done():
		}
	}
	if ready {
		if d := time.Until(f.readyAt); d > 0 {
			ready = wait(time.After(d))
		}
	}
	if !ready {
		out := map[string]string{"type": "try_again", "request_id": f.id, "queue_state": "active"}
		if ahead := s.futures.pendingBefore(f); ahead >= busyQueue {
			out["queue_state"] = "paused_capacity"
			out["queue_state_reason"] = fmt.Sprintf("waiting for capacity: %d requests ahead", ahead)
		}
		writeJSON(w, 200, out)
		return nil
	}
	if f.failure != nil {
		writeRaw(w, 200, f.failure)
		return nil
	}
	wantProto := f.proto != nil && strings.Contains(r.Header.Get("Accept"), "application/x-protobuf")
	payload := f.result
	if wantProto {
		payload = f.proto
	}
	s.futures.mu.Lock()
	sendMeta := body.AllowMetadataOnly && !f.sentMeta && len(payload) > 1<<20
	if sendMeta {
		f.sentMeta = true
	}
	s.futures.mu.Unlock()
	if sendMeta {
		writeJSON(w, 200, map[string]any{"status": "complete_metadata", "response_payload_size": len(payload)})
		return nil
	}
	if wantProto {
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		w.WriteHeader(200)
		w.Write(payload)
		return nil
	}
	writeRaw(w, 200, payload)
	return nil
}

func writeFuture(w http.ResponseWriter, f *future, modelID string) {
	out := map[string]string{"request_id": f.id}
	if modelID != "" {
		out["model_id"] = modelID
	}
	writeJSON(w, 200, out)
}

// ---- sessions -------------------------------------------------------------

func (s *Server) logRequest(session, name string, start time.Time, status int, detail string) {
	if session == "" {
		return
	}
	if err := s.st.LogRequest(session, store.LoggedRequest{Name: name, Start: start, Dur: time.Since(start), Status: status, Detail: detail}); err != nil {
		s.opts.Logf("log request: %v", err)
	}
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	var body struct {
		Tags         []string          `json:"tags"`
		UserMetadata map[string]string `json:"user_metadata"`
		SDKVersion   string            `json:"sdk_version"`
		ProjectID    string            `json:"project_id"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	now := s.now()
	// Deterministic under a pinned clock (golden tests), unique otherwise;
	// serialised so concurrent creations under one clock reading differ.
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	n := len(s.st.ListSessions(owner, -1, 0))
	id := uuid.NewSHA1(ownerNamespace, fmt.Appendf(nil, "%s/%d/%d", owner, now.UnixNano(), n)).String()
	if err := s.st.CreateSession(store.Session{ID: id, Owner: owner, ProjectID: body.ProjectID, Tags: body.Tags,
		UserMetadata: body.UserMetadata, SDKVersion: body.SDKVersion, CreatedAt: now, LastHeartbeat: now}); err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	s.logRequest(id, "create_session", time.Now(), 200, "")
	writeJSON(w, 200, map[string]string{"session_id": id, "type": "create_session"})
	return nil
}

// liveSession checks the session belongs to the caller and is still alive.
func (s *Server) liveSession(owner, id string) (store.Session, *apiError) {
	se, _, _, ok := s.st.Session(id)
	if !ok || se.Owner != owner {
		return se, errorf(http.StatusNotFound, "Session %s not found", id)
	}
	if s.now().Sub(se.LastHeartbeat) > s.opts.HeartbeatTimeout {
		return se, errorf(http.StatusGone, "Session %s expired after missing heartbeats; create a new session", id)
	}
	return se, nil
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	var body struct {
		SessionID string `json:"session_id"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if _, e := s.liveSession(owner, body.SessionID); e != nil {
		return e
	}
	if err := s.st.Heartbeat(body.SessionID, s.now()); err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	writeRaw(w, 200, []byte(`{"type":"session_heartbeat"}`))
	return nil
}

// ---- models and checkpoints -----------------------------------------------

func (s *Server) createModel(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	start := time.Now()
	var body struct {
		SessionID    string            `json:"session_id"`
		ModelSeqID   *int              `json:"model_seq_id"`
		BaseModel    string            `json:"base_model"`
		UserMetadata map[string]string `json:"user_metadata"`
		LoraConfig   *struct {
			Rank         int         `json:"rank"`
			Seed         json.Number `json:"seed"`
			TrainUnembed *bool       `json:"train_unembed"`
			TrainMLP     *bool       `json:"train_mlp"`
			TrainAttn    *bool       `json:"train_attn"`
		} `json:"lora_config"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if body.ModelSeqID == nil || *body.ModelSeqID < 0 {
		return errorf(http.StatusUnprocessableEntity, "model_seq_id is required (a per-session counter from 0)")
	}
	se, e := s.liveSession(owner, body.SessionID)
	if e != nil {
		return e
	}
	arch, ok := models.Lookup(body.BaseModel)
	if !ok {
		return errorf(http.StatusBadRequest, "Unknown base model %q; see get_server_capabilities for the supported models", body.BaseModel)
	}
	run := store.Run{ID: fmt.Sprintf("%s:train:%d", se.ID, *body.ModelSeqID), SessionID: se.ID, Owner: owner, BaseModel: arch.Name,
		IsLora: true, LoraRank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true, Seed: rand.Uint64() >> 1,
		UserMetadata: body.UserMetadata, CreatedAt: s.now(), LastRequestTime: s.now()}
	if lc := body.LoraConfig; lc != nil {
		run.LoraRank = lc.Rank
		if lc.Seed != "" {
			seed, err := foldSeed(string(lc.Seed)) // SQLite integers are signed 64-bit
			if err != nil {
				return errorf(http.StatusUnprocessableEntity, "lora_config.seed must be an integer, got %s", lc.Seed)
			}
			run.Seed = uint64(seed)
		}
		for _, p := range []struct {
			v   *bool
			dst *bool
		}{{lc.TrainAttn, &run.TrainAttn}, {lc.TrainMLP, &run.TrainMLP}, {lc.TrainUnembed, &run.TrainUnembed}} {
			if p.v != nil {
				*p.dst = *p.v
			}
		}
	}
	if run.LoraRank <= 0 || run.LoraRank > 1024 {
		return errorf(http.StatusBadRequest, "lora_config.rank must be between 1 and 1024, got %d", run.LoraRank)
	}
	if !run.TrainAttn && !run.TrainMLP && !run.TrainUnembed {
		return errorf(http.StatusBadRequest, "at least one of train_attn, train_mlp, train_unembed must be true")
	}
	if err := s.st.CreateRun(run); err != nil {
		if errors.Is(err, store.ErrExists) {
			return errorf(http.StatusConflict, "Model %s already exists: use the next model_seq_id", run.ID)
		}
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	res, _ := json.Marshal(map[string]string{"model_id": run.ID, "type": "create_model"})
	f := s.newFuture(run.ID+":0", func() ([]byte, []byte, error) { return res, nil, nil })
	s.logRequest(se.ID, "create_model", start, 200, run.ID)
	writeFuture(w, f, run.ID)
	return nil
}

// ownedRun resolves a model id the caller owns.
func (s *Server) ownedRun(owner, modelID string) (store.RunView, *apiError) {
	v, ok := s.st.Run(modelID, s.now())
	if !ok || v.Owner != owner {
		return v, errorf(http.StatusNotFound, "Model %s not found", modelID)
	}
	return v, nil
}

func (s *Server) getInfo(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	var body struct {
		ModelID string `json:"model_id"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	v, e := s.ownedRun(owner, body.ModelID)
	if e != nil {
		return e
	}
	arch, _ := models.Lookup(v.BaseModel)
	md := map[string]any{"model_name": v.BaseModel, "arch": "unknown"}
	if arch != nil {
		md["arch"], md["tokenizer_id"] = arch.Family, arch.TokenizerID
	}
	out := map[string]any{"model_id": v.ID, "model_data": md, "is_lora": v.IsLora, "model_name": v.BaseModel, "type": "get_info"}
	if v.IsLora {
		out["lora_rank"] = v.LoraRank
	}
	writeJSON(w, 200, out)
	return nil
}

// validName rejects checkpoint names that cannot be a tinker path segment
// or would escape the checkpoint directory.
func validName(n string) error {
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00") || len(n) > 200 {
		return fmt.Errorf("invalid checkpoint name %q: use a non-empty name without slashes", n)
	}
	return nil
}

// saveCheckpoint records (and, when small enough, writes) a checkpoint of
// run holding its current weights. Without training those are the LoRA
// initialisation, deterministic from the run's seed.
func (s *Server) saveCheckpoint(run store.RunView, kind, name string, ttl *int64, overwrite bool) (store.Checkpoint, error) {
	now := s.now()
	c := store.Checkpoint{RunID: run.ID, Kind: kind, Name: name, Owner: run.Owner, Time: now, Seed: run.Seed}
	if ttl != nil {
		e := now.Add(time.Duration(*ttl) * time.Second)
		c.ExpiresAt = &e
	}
	p, err := s.archives.plan(run.Run, kind, run.Seed)
	if err != nil {
		return c, err
	}
	c.SizeBytes = p.Size()
	if !overwrite {
		if _, ok := s.st.Checkpoint(run.ID, kind, name, now); ok {
			return c, userErrorf("Checkpoint %s already exists", c.TinkerPath())
		}
	}
	if c.SizeBytes <= s.opts.ArchiveSyncLimit {
		if err := p.WriteDir(s.checkpointDir(run.ID, kind, name)); err != nil {
			return c, err
		}
	} else {
		s.archives.remove(run.ID, kind, name) // stale files of an overwritten checkpoint
	}
	if err := s.st.PutCheckpoint(c, overwrite, now); err != nil {
		if errors.Is(err, store.ErrExists) {
			return c, userErrorf("Checkpoint %s already exists", c.TinkerPath())
		}
		return c, err
	}
	return c, nil
}

type saveBody struct {
	ModelID              string `json:"model_id"`
	Path                 string `json:"path"`
	SeqID                *int   `json:"seq_id"`
	TTLSeconds           *int64 `json:"ttl_seconds"`
	Overwrite            bool   `json:"overwrite"`
	SamplingSessionSeqID *int   `json:"sampling_session_seq_id"`
}

func (s *Server) save(w http.ResponseWriter, r *http.Request, owner, kind string) *apiError {
	start := time.Now()
	var body saveBody
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	run, e := s.ownedRun(owner, body.ModelID)
	if e != nil {
		return e
	}
	if body.TTLSeconds != nil && *body.TTLSeconds <= 0 {
		return errorf(http.StatusBadRequest, "ttl_seconds must be positive, got %d", *body.TTLSeconds)
	}
	seq := 0
	if body.SeqID != nil {
		seq = *body.SeqID
	}
	s.st.TouchRun(run.ID, s.now())
	reqType := map[string]string{"weights": "save_weights", "sampler_weights": "save_weights_for_sampler"}[kind]
	if kind == "sampler_weights" && body.Path == "" && body.SamplingSessionSeqID != nil {
		// Ephemeral save: a sampler bound to the run's current weights.
		sid := fmt.Sprintf("%s:sample:%d", run.SessionID, *body.SamplingSessionSeqID)
		if _, exists := s.st.Sampler(sid); exists {
			return errorf(http.StatusConflict, "Sampling session %s already exists: use the next sampling_session_seq_id", sid)
		}
		if err := s.st.CreateSampler(store.Sampler{ID: sid, SessionID: run.SessionID, Owner: owner, BaseModel: run.BaseModel,
			ModelPath: "", CreatedAt: s.now()}); err != nil {
			return errorf(http.StatusInternalServerError, "%v", err)
		}
		res, _ := json.Marshal(map[string]any{"path": nil, "sampling_session_id": sid, "type": reqType})
		f := s.newFuture(fmt.Sprintf("%s:%d", run.ID, seq), func() ([]byte, []byte, error) { return res, nil, nil })
		s.logRequest(run.SessionID, reqType, start, 200, sid)
		writeFuture(w, f, run.ID)
		return nil
	}
	name := body.Path
	if name == "" {
		name = fmt.Sprintf("%06d", seq)
	}
	if err := validName(name); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	f := s.newFuture(fmt.Sprintf("%s:%d", run.ID, seq), func() ([]byte, []byte, error) {
		c, err := s.saveCheckpoint(run, kind, name, body.TTLSeconds, body.Overwrite && kind == "weights")
		status, detail := 200, c.TinkerPath()
		if err != nil {
			status, detail = 400, err.Error()
		}
		s.logRequest(run.SessionID, reqType, start, status, detail)
		if err != nil {
			return nil, nil, err
		}
		out := map[string]any{"path": c.TinkerPath(), "type": reqType}
		if kind == "sampler_weights" {
			out["size_bytes"] = c.SizeBytes
		}
		res, _ := json.Marshal(out)
		return res, nil, nil
	})
	writeFuture(w, f, run.ID)
	return nil
}

func (s *Server) saveWeights(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	return s.save(w, r, owner, "weights")
}

func (s *Server) saveWeightsForSampler(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	return s.save(w, r, owner, "sampler_weights")
}

// ---- sampling -------------------------------------------------------------

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

// foldSeed accepts any 64-bit integer seed (signed or unsigned) and folds
// it into int63, as the service does.
func foldSeed(s string) (int64, error) {
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return int64(u & (1<<63 - 1)), nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	return i & (1<<63 - 1), err
}

// sampleJSON is the legacy JSON form of a sample result.
func sampleJSON(r *SampleResponse) []byte {
	type seq struct {
		StopReason string    `json:"stop_reason"`
		Tokens     []int     `json:"tokens"`
		Logprobs   []float32 `json:"logprobs"`
	}
	out := struct {
		Type   string     `json:"type"`
		Seqs   []seq      `json:"sequences"`
		Prompt []*float32 `json:"prompt_logprobs"`
		TopK   [][][2]any `json:"topk_prompt_logprobs"`
	}{Type: "sample", Prompt: r.PromptLogprobs}
	for _, s := range r.Sequences {
		out.Seqs = append(out.Seqs, seq{s.StopReason, s.Tokens, s.Logprobs})
	}
	if r.TopKPromptLogprobs != nil {
		for _, row := range r.TopKPromptLogprobs {
			if row == nil {
				out.TopK = append(out.TopK, nil)
				continue
			}
			var cells [][2]any
			for _, e := range row {
				cells = append(cells, [2]any{e.Token, e.Logprob})
			}
			out.TopK = append(out.TopK, cells)
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// sampleProto encodes tinker_public.SampleResponse (spec §3.12) by hand:
// arrays are raw little-endian bytes fields.
func sampleProto(r *SampleResponse) []byte {
	var b []byte
	for _, s := range r.Sequences {
		var m []byte
		if s.StopReason == "length" {
			m = protowire.AppendTag(m, 1, protowire.VarintType)
			m = protowire.AppendVarint(m, 1)
		}
		toks := make([]byte, 0, 4*len(s.Tokens))
		for _, t := range s.Tokens {
			toks = binary.LittleEndian.AppendUint32(toks, uint32(int32(t)))
		}
		m = protowire.AppendTag(m, 2, protowire.BytesType)
		m = protowire.AppendBytes(m, toks)
		if s.Logprobs != nil {
			m = protowire.AppendTag(m, 3, protowire.BytesType)
			m = protowire.AppendBytes(m, f32bytes(s.Logprobs))
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	if r.PromptLogprobs != nil {
		vals := make([]float32, len(r.PromptLogprobs))
		for i, p := range r.PromptLogprobs {
			if p == nil {
				vals[i] = float32(math.NaN())
			} else {
				vals[i] = *p
			}
		}
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, f32bytes(vals))
	}
	if r.TopKPromptLogprobs != nil {
		k := 0
		for _, row := range r.TopKPromptLogprobs {
			k = max(k, len(row))
		}
		var ids, lps []byte
		for _, row := range r.TopKPromptLogprobs {
			for j := 0; j < k; j++ {
				id, lp := int32(0), float32(-99999.0)
				if j < len(row) {
					id, lp = int32(row[j].Token), row[j].Logprob
				}
				ids = binary.LittleEndian.AppendUint32(ids, uint32(id))
				lps = binary.LittleEndian.AppendUint32(lps, math.Float32bits(lp))
			}
		}
		var m []byte
		m = protowire.AppendTag(m, 1, protowire.BytesType)
		m = protowire.AppendBytes(m, ids)
		m = protowire.AppendTag(m, 2, protowire.BytesType)
		m = protowire.AppendBytes(m, lps)
		m = protowire.AppendTag(m, 3, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(k))
		m = protowire.AppendTag(m, 4, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(len(r.TopKPromptLogprobs)))
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b
}

func f32bytes(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, x := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
	}
	return out
}
