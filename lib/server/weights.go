package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tinkershell/tinker/lib/store"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Saving and loading weights: see docs/protocol.md, "Models and weights".

// saveCheckpoint records (and, when small enough, writes) a checkpoint of
// run holding its current weights. Without training those are the LoRA
// initialisation, deterministic from the run's seed.
func (s *Server) saveCheckpoint(run store.RunView, kind, name string, ttl *int64, overwrite bool) (store.Checkpoint, error) {
	now := s.now()
	c := store.Checkpoint{RunID: run.ID, Kind: kind, Name: name, Owner: run.Owner, Time: now, Seed: run.Seed}
	exp, e := checkTTL("ttl_seconds", ttl, now)
	if e != nil {
		return c, userError{e.detail}
	}
	c.ExpiresAt = exp
	p, err := s.archives.plans.get(run.Run, kind, run.Seed)
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

func (s *Server) save(w http.ResponseWriter, r *http.Request, owner, kind string) *errorResponse {
	start := time.Now()
	var body saveBody
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if _, e := checkTTL("ttl_seconds", body.TTLSeconds, s.now()); e != nil {
		return e
	}
	if e := s.futures.admit(owner); e != nil {
		return e
	}
	run, e := s.ownedRun(owner, body.ModelID)
	if e != nil {
		return e
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
			return storeFailure("save", err)
		}
		res, _ := json.Marshal(map[string]any{"path": nil, "sampling_session_id": sid, "type": reqType})
		f := s.startFuture(owner, func() ([]byte, []byte, error) { return res, nil, nil })
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
	plan, err := s.archives.plans.get(run.Run, kind, run.Seed)
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	need := plan.Size()
	if need > s.opts.ArchiveSyncLimit {
		need = 0 // written when first downloaded
	}
	if e := s.checkRoom("saving "+name, need); e != nil {
		return e
	}
	f := s.startFuture(owner, func() ([]byte, []byte, error) {
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

func (s *Server) saveWeights(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	return s.save(w, r, owner, "weights")
}

func (s *Server) saveWeightsForSampler(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	return s.save(w, r, owner, "sampler_weights")
}

// loadWeights implements POST /api/v1/load_weights in both addressing
// modes: into an existing model (model_id), or creating the model from the
// checkpoint (session_id + model_seq_id). Without a trainer a run's weights
// are fully described by its LoRA config and seed, so loading a checkpoint
// adopts the checkpoint's seed and later saves reproduce its weights.
func (s *Server) loadWeights(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	start := time.Now()
	var body struct {
		ModelID      string            `json:"model_id"`
		SeqID        *int              `json:"seq_id"`
		SessionID    string            `json:"session_id"`
		ModelSeqID   *int              `json:"model_seq_id"`
		BaseModel    string            `json:"base_model"`
		UserMetadata map[string]string `json:"user_metadata"`
		Path         string            `json:"path"`
		Optimizer    *bool             `json:"optimizer"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	if e := checkMetadata("user_metadata", body.UserMetadata); e != nil {
		return e
	}
	if e := s.futures.admit(owner); e != nil {
		return e
	}
	p, err := tinkerapi.ParsePath(body.Path)
	if err != nil {
		return errorf(http.StatusBadRequest, "Invalid checkpoint tinker path %s.", body.Path)
	}
	now := s.now()
	c, ok := s.st.Checkpoint(p.RunID, p.Kind, p.Name, now)
	if !ok || (c.Owner != owner && !c.Public) {
		return errorf(http.StatusNotFound, "Checkpoint %s not found", body.Path)
	}
	src, _ := s.st.Run(p.RunID, now)
	var run store.RunView
	switch {
	case body.ModelID != "":
		var e *errorResponse
		if run, e = s.ownedRun(owner, body.ModelID); e != nil {
			return e
		}
		if run.BaseModel != src.BaseModel || run.LoraRank != src.LoraRank || run.TrainAttn != src.TrainAttn ||
			run.TrainMLP != src.TrainMLP || run.TrainUnembed != src.TrainUnembed {
			return errorf(http.StatusBadRequest, "Checkpoint %s (%s, rank %d) does not match model %s (%s, rank %d)",
				body.Path, src.BaseModel, src.LoraRank, run.ID, run.BaseModel, run.LoraRank)
		}
	case body.SessionID != "" && body.ModelSeqID != nil:
		se, e := s.liveSession(owner, body.SessionID)
		if e != nil {
			return e
		}
		if body.BaseModel != "" && body.BaseModel != src.BaseModel {
			return errorf(http.StatusBadRequest, "base_model %s does not match the checkpoint's %s", body.BaseModel, src.BaseModel)
		}
		nr := src.Run
		nr.ID, nr.SessionID, nr.Owner, nr.Corrupted = fmt.Sprintf("%s:train:%d", se.ID, *body.ModelSeqID), se.ID, owner, false
		nr.UserMetadata, nr.CreatedAt, nr.LastRequestTime = body.UserMetadata, now, now
		if err := s.st.CreateRun(nr); err != nil {
			if errors.Is(err, store.ErrExists) {
				return errorf(http.StatusConflict, "Model %s already exists: use the next model_seq_id", nr.ID)
			}
			return storeFailure("save", err)
		}
		run, _ = s.st.Run(nr.ID, now)
	default:
		return errorf(http.StatusUnprocessableEntity, "load_weights needs model_id, or session_id and model_seq_id")
	}
	if err := s.st.SetRunWeights(run.ID, c.Seed, now); err != nil {
		return storeFailure("save", err)
	}
	res, _ := json.Marshal(map[string]string{"path": body.Path, "model_id": run.ID, "type": "load_weights"})
	f := s.startFuture(owner, func() ([]byte, []byte, error) { return res, nil, nil })
	s.logRequest(run.SessionID, "load_weights", start, 200, body.Path)
	writeFuture(w, f, run.ID)
	return nil
}
