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

// loadWeights implements POST /api/v1/load_weights in both addressing
// modes: into an existing model (model_id), or creating the model from the
// checkpoint (session_id + model_seq_id). Without a trainer a run's weights
// are fully described by its LoRA config and seed, so loading a checkpoint
// adopts the checkpoint's seed and later saves reproduce its weights.
func (s *Server) loadWeights(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
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
		var e *apiError
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
			return errorf(http.StatusInternalServerError, "%v", err)
		}
		run, _ = s.st.Run(nr.ID, now)
	default:
		return errorf(http.StatusUnprocessableEntity, "load_weights needs model_id, or session_id and model_seq_id")
	}
	if err := s.st.SetRunWeights(run.ID, c.Seed, now); err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	seq := 0
	if body.SeqID != nil {
		seq = *body.SeqID
	}
	res, _ := json.Marshal(map[string]string{"path": body.Path, "model_id": run.ID, "type": "load_weights"})
	f := s.newFuture(fmt.Sprintf("%s:%d", run.ID, seq), func() ([]byte, []byte, error) { return res, nil, nil })
	s.logRequest(run.SessionID, "load_weights", start, 200, body.Path)
	writeFuture(w, f, run.ID)
	return nil
}

// notTraining answers the gradient endpoints: the local server stores and
// serves checkpoints and samples, but does not train.
func (s *Server) notTraining(w http.ResponseWriter, r *http.Request, owner string, seg []string) *apiError {
	return errorf(http.StatusBadRequest, "%s is not supported by the local server: it stores checkpoints and samples but does not train; use the Tinker service for training", seg[0])
}
