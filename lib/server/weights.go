package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/peft"
	"github.com/tinkershell/tinker/lib/store"
)

// Saving and loading weights: see docs/protocol.md, "Models and weights".

// saveCheckpoint records and writes a checkpoint of run holding its current
// weights: the trainer's when the model has trained (or loaded a
// checkpoint) on this server, written now; otherwise the LoRA
// initialisation from the run's seed, written now when small enough and
// else generated on first use (archive.go).
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
	tr, err := s.trained(run)
	if err != nil {
		return c, err
	}
	hold, err := holdRunDir(s.opts.DataDir, run.ID)
	if err != nil {
		return c, err
	}
	defer hold.Close()
	unlock := s.archives.lock(s.checkpointDir(run.ID, kind, name))
	defer unlock()
	if err := s.saveFiles(&c, p, tr); err != nil {
		return c, err
	}
	if err := s.st.PutCheckpoint(c, overwrite, now); err != nil {
		if errors.Is(err, store.ErrExists) {
			return c, userErrorf("Checkpoint %s already exists", c.TinkerPath())
		}
		return c, err
	}
	return c, nil
}

// saveFiles writes checkpoint c's files: a trainer's weights (the only
// copy: c.FilesOnly), or the seed's initialisation now when small, or
// none (generated on first use), removing stale ones.
func (s *Server) saveFiles(c *store.Checkpoint, p *peft.Plan, tr *engine.Trainer) error {
	dir := s.checkpointDir(c.RunID, c.Kind, c.Name)
	switch {
	case tr != nil:
		if err := writeTrained(p, tr, dir, c.Kind == "weights"); err != nil {
			return err
		}
		s.archives.keep(dir)
		c.FilesOnly = true
		return nil
	case c.SizeBytes <= s.opts.ArchiveSyncLimit:
		return p.WriteDir(dir)
	}
	return s.archives.remove(c.RunID, c.Kind, c.Name) // stale files of an overwritten checkpoint
}

// ephemeralDir holds the adapter of a sampler made by
// save_weights_for_sampler without a path.
func (s *Server) ephemeralDir(samplerID string) string {
	return filepath.Join(s.opts.DataDir, "samplers", url.PathEscape(samplerID))
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
	run, release, e := s.admitOwned(owner, body.ModelID)
	if e != nil {
		return e
	}
	defer release()
	s.st.TouchRun(run.ID, s.now())
	ephemeral := kind == "sampler_weights" && body.Path == "" && body.SamplingSessionSeqID != nil
	m := s.trainers.model(run.ID)
	seq, e := m.accept(run.ID, body.SeqID)
	if e != nil {
		return e
	}
	if ephemeral {
		e = s.saveEphemeral(w, owner, run, kind, *body.SamplingSessionSeqID, seq, start)
	} else {
		e = s.saveNamed(w, owner, run, kind, &body, seq, start)
	}
	if e != nil {
		m.finish(seq)
	}
	return e
}

// saveEphemeral binds a new sampling session to the model's weights as
// they are when the save runs; a trained model's adapter is written for it.
func (s *Server) saveEphemeral(w http.ResponseWriter, owner string, run store.RunView, kind string, samplingSeq, seq int, start time.Time) *errorResponse {
	reqType := "save_weights_for_sampler"
	sid := fmt.Sprintf("%s:sample:%d", run.SessionID, samplingSeq)
	if _, exists := s.st.Sampler(sid); exists {
		return errorf(http.StatusConflict, "Sampling session %s already exists: use the next sampling_session_seq_id", sid)
	}
	if err := s.st.CreateSampler(store.Sampler{ID: sid, SessionID: run.SessionID, Owner: owner, BaseModel: run.BaseModel,
		ModelPath: "", CreatedAt: s.now()}); err != nil {
		return storeFailure("save", err)
	}
	f := s.startFutureOf(owner, run.ID, s.trainers.inOrder(run.ID, seq, func() ([]byte, []byte, error) {
		tr, err := s.trained(run)
		if err != nil {
			s.logRequest(run.SessionID, reqType, start, 400, err.Error())
			return nil, nil, err
		}
		if tr != nil {
			p, err := s.archives.plans.get(run.Run, kind, run.Seed)
			if err == nil {
				err = writeTrained(p, tr, s.ephemeralDir(sid), false)
			}
			if err != nil {
				s.logRequest(run.SessionID, reqType, start, 500, err.Error())
				return nil, nil, fmt.Errorf("save sampler weights of %s: %w", run.ID, err)
			}
		}
		s.logRequest(run.SessionID, reqType, start, 200, sid)
		res, _ := json.Marshal(map[string]any{"path": nil, "sampling_session_id": sid, "type": reqType})
		return res, nil, nil
	}))
	writeFuture(w, f, run.ID)
	return nil
}

// saveNamed saves a checkpoint under body.Path (or a name from the seq_id).
func (s *Server) saveNamed(w http.ResponseWriter, owner string, run store.RunView, kind string, body *saveBody, seq int, start time.Time) *errorResponse {
	reqType := map[string]string{"weights": "save_weights", "sampler_weights": "save_weights_for_sampler"}[kind]
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
	if need > s.opts.ArchiveSyncLimit && !s.trainers.hasWeights(run.ID) {
		need = 0 // written when first downloaded
	}
	if e := s.checkRoom("saving "+name, need); e != nil {
		return e
	}
	f := s.startFutureOf(owner, run.ID, s.trainers.inOrder(run.ID, seq, func() ([]byte, []byte, error) {
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
	}))
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
// checkpoint (session_id + model_seq_id). The checkpoint may be another
// user's if it is public.
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
	release, e := s.futures.admit(owner)
	if e != nil {
		return e
	}
	defer release()
	now := s.now()
	c, e := s.readableCheckpoint(owner, body.Path, now)
	if e != nil {
		return e
	}
	src, _ := s.st.Run(c.RunID, now)
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
		if e := s.checkServable(src.BaseModel); e != nil {
			return e
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
	res, _ := json.Marshal(map[string]string{"path": body.Path, "model_id": run.ID, "type": "load_weights"})
	withOpt := body.Optimizer != nil && *body.Optimizer
	if body.ModelID == "" {
		// A new model: loaded before it is announced, so its first
		// operation (seq_id 1) finds the weights in place.
		if err := s.loadCheckpoint(run, c, withOpt); err != nil {
			s.logRequest(run.SessionID, "load_weights", start, 500, err.Error())
			return storeFailure("load", err)
		}
		f := s.startFuture(owner, func() ([]byte, []byte, error) { return res, nil, nil })
		s.logRequest(run.SessionID, "load_weights", start, 200, body.Path)
		writeFuture(w, f, run.ID)
		return nil
	}
	seq, e := s.trainers.model(run.ID).accept(run.ID, body.SeqID)
	if e != nil {
		return e
	}
	f := s.startFutureOf(owner, run.ID, s.trainers.inOrder(run.ID, seq, func() ([]byte, []byte, error) {
		if err := s.loadCheckpoint(run, c, withOpt); err != nil {
			s.logRequest(run.SessionID, "load_weights", start, 500, err.Error())
			return nil, nil, err
		}
		s.logRequest(run.SessionID, "load_weights", start, 200, body.Path)
		return res, nil, nil
	}))
	writeFuture(w, f, run.ID)
	return nil
}

// loadCheckpoint makes checkpoint c the weights of run: its files
// (generated first if they never were) go into the model's trainer, with
// the optimizer state when withOpt and the checkpoint has one (a checkpoint
// of an untrained model has none: its optimizer state is the fresh one).
// Where the base model cannot be trained here, the run adopts the
// checkpoint's seed, which describes an untrained checkpoint fully.
func (s *Server) loadCheckpoint(run store.RunView, c store.Checkpoint, withOpt bool) error {
	if err := s.st.SetRunWeights(run.ID, c.Seed, s.now()); err != nil {
		return err
	}
	run.Seed = c.Seed
	s.trainers.forget(run.ID) // the checkpoint replaces whatever was lost
	tr, err := s.trainer(run)
	if err != nil {
		var ue userError
		if errors.As(err, &ue) {
			return nil
		}
		return err
	}
	if err := s.archives.materialise(c, false); err != nil {
		return fmt.Errorf("load %s: %w", c.TinkerPath(), err)
	}
	dir := s.checkpointDir(c.RunID, c.Kind, c.Name)
	if _, err := os.Stat(filepath.Join(dir, engine.OptimizerFile)); err != nil {
		withOpt = false
	}
	if err := tr.LoadStateDir(dir, withOpt); err != nil {
		return fmt.Errorf("load %s: %w", c.TinkerPath(), err)
	}
	return nil
}
