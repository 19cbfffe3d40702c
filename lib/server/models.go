package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/tinkershell/tinker/lib/models"
	"github.com/tinkershell/tinker/lib/store"
)

// createModel answers create_model: a LoRA training run of a supported
// base model, with id <session>:train:<model_seq_id>. See docs/protocol.md,
// "Models and weights".
func (s *Server) createModel(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
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
	if e := checkMetadata("user_metadata", body.UserMetadata); e != nil {
		return e
	}
	release, e := s.futures.admit(owner)
	if e != nil {
		return e
	}
	defer release()
	se, e := s.liveSession(owner, body.SessionID)
	if e != nil {
		return e
	}
	arch, ok := models.Lookup(body.BaseModel)
	if !ok {
		return errorf(http.StatusBadRequest, "%v", models.NotInCatalog(body.BaseModel))
	}
	if e := s.checkServable(arch.Name); e != nil {
		return e
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
	if e := checkInt("lora_config.rank", int64(run.LoraRank), 1, maxLoraRank); e != nil {
		return e
	}
	if !run.TrainAttn && !run.TrainMLP && !run.TrainUnembed {
		return errorf(http.StatusBadRequest, "at least one of train_attn, train_mlp, train_unembed must be true")
	}
	if err := s.st.CreateRun(run); err != nil {
		if errors.Is(err, store.ErrExists) {
			return errorf(http.StatusConflict, "Model %s already exists: use the next model_seq_id", run.ID)
		}
		return storeFailure("create model", err)
	}
	res, _ := json.Marshal(map[string]string{"model_id": run.ID, "type": "create_model"})
	f := s.startFuture(owner, func() ([]byte, []byte, error) { return res, nil, nil })
	s.logRequest(se.ID, "create_model", start, 200, run.ID)
	writeFuture(w, f, run.ID)
	return nil
}

// ownedRun resolves a model id the caller owns.
func (s *Server) ownedRun(owner, modelID string) (store.RunView, *errorResponse) {
	v, ok := s.st.Run(modelID, s.now())
	if !ok || v.Owner != owner {
		return v, errorf(http.StatusNotFound, "Model %s not found", modelID)
	}
	return v, nil
}

// admitOwned is ownedRun for a request that starts a future: it first
// reserves the future's slot in the caller's limit (see futureTable.admit;
// the caller defers release).
func (s *Server) admitOwned(owner, modelID string) (run store.RunView, release func(), e *errorResponse) {
	if release, e = s.futures.admit(owner); e != nil {
		return store.RunView{}, nil, e
	}
	if run, e = s.ownedRun(owner, modelID); e != nil {
		release()
		return store.RunView{}, nil, e
	}
	return run, release, nil
}

func (s *Server) getInfo(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
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

// servable is nil when the server can load base model name now; else the
// error says how to provide its weights. Without an engine nothing is
// loaded here, so every catalog model counts as servable.
func (s *Server) servable(name string) error {
	if s.opts.Engine == nil {
		return nil
	}
	return s.opts.Engine.Servable(name)
}

// checkServable refuses to create a model of a base model whose weights
// are absent, at once rather than at its first forward_backward.
func (s *Server) checkServable(name string) *errorResponse {
	if err := s.servable(name); err != nil {
		return errorf(http.StatusBadRequest, "Base model %s cannot be trained on this server: %v", name, err)
	}
	return nil
}
