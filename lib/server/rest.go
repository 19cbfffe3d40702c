package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/store"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// The REST listings of runs and checkpoints and the checkpoint operations
// (delete, publish, TTL): see docs/protocol.md, "Runs and checkpoints".

// appendCheckpoint encodes a checkpoint exactly as the service does (field
// order of the SDK model, microsecond timestamps). Hand-written because the
// listing endpoints encode thousands of these per request.
func appendCheckpoint(b []byte, c *store.Checkpoint) []byte {
	b = append(b, `{"checkpoint_id":"`...)
	b = appendJSONStringBody(b, c.Kind)
	b = append(b, '/')
	b = appendJSONStringBody(b, c.Name)
	b = append(b, `","checkpoint_type":"`...)
	b = append(b, c.Type()...)
	b = append(b, `","time":`...)
	b = appendTS(b, c.Time)
	b = append(b, `,"tinker_path":"tinker://`...)
	b = appendJSONStringBody(b, c.RunID)
	b = append(b, '/')
	b = appendJSONStringBody(b, c.Kind)
	b = append(b, '/')
	b = appendJSONStringBody(b, c.Name)
	b = append(b, `","size_bytes":`...)
	b = strconv.AppendInt(b, c.SizeBytes, 10)
	b = append(b, `,"public":`...)
	b = strconv.AppendBool(b, c.Public)
	b = append(b, `,"expires_at":`...)
	if c.ExpiresAt != nil {
		b = appendTS(b, *c.ExpiresAt)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// appendJSONStringBody appends s escaped for the inside of a JSON string.
// Plain printable ASCII (every id this server creates) is copied as is;
// the test looks at eight bytes at a time, five strings per checkpoint.
func appendJSONStringBody(b []byte, s string) []byte {
	if !render.PlainASCII(s) {
		q, _ := json.Marshal(s)
		return append(b, q[1:len(q)-1]...)
	}
	return append(b, s...)
}

type rawCheckpoint store.Checkpoint

func (c *rawCheckpoint) MarshalJSON() ([]byte, error) {
	return appendCheckpoint(nil, (*store.Checkpoint)(c)), nil
}

type runJSON struct {
	TrainingRunID         string            `json:"training_run_id"`
	BaseModel             string            `json:"base_model"`
	ModelOwner            string            `json:"model_owner"`
	IsLora                bool              `json:"is_lora"`
	Corrupted             bool              `json:"corrupted"`
	LoraRank              *int              `json:"lora_rank"`
	LastRequestTime       ts                `json:"last_request_time"`
	LastCheckpoint        *rawCheckpoint    `json:"last_checkpoint"`
	LastSamplerCheckpoint *rawCheckpoint    `json:"last_sampler_checkpoint"`
	UserMetadata          map[string]string `json:"user_metadata"`
}

func toRunJSON(v store.RunView) runJSON {
	j := runJSON{TrainingRunID: v.ID, BaseModel: v.BaseModel, ModelOwner: v.Owner, IsLora: v.IsLora, Corrupted: v.Corrupted,
		LastRequestTime: ts(v.LastRequestTime), LastCheckpoint: (*rawCheckpoint)(v.LastCheckpoint),
		LastSamplerCheckpoint: (*rawCheckpoint)(v.LastSamplerCheckpoint), UserMetadata: v.UserMetadata}
	if v.IsLora {
		r := v.LoraRank
		j.LoraRank = &r
	}
	return j
}

// pageParams parses limit/offset: FastAPI-like 422s for what is not a
// non-negative integer, 400 beyond maxPageLimit / maxPageOffset.
func pageParams(r *http.Request, defLimit int) (limit, offset int, e *errorResponse) {
	q := r.URL.Query()
	parse := func(field string, def int, hi int64) (int, *errorResponse) {
		v := q.Get(field)
		if v == "" {
			return def, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if (err != nil && !errors.Is(err, strconv.ErrRange)) || strings.HasPrefix(v, "-") {
			return 0, errorf(http.StatusUnprocessableEntity, "%s must be a non-negative integer, got %q", field, v)
		}
		if err != nil {
			return 0, errorf(http.StatusBadRequest, "%s must be between 0 and %d, got %s", field, hi, v)
		}
		if e := checkInt(field, n, 0, hi); e != nil {
			return 0, e
		}
		return int(n), nil
	}
	if limit, e = parse("limit", defLimit, maxPageLimit); e != nil {
		return 0, 0, e
	}
	if offset, e = parse("offset", 0, maxPageOffset); e != nil {
		return 0, 0, e
	}
	return limit, offset, nil
}

func accessScope(r *http.Request) (accessible bool, e *errorResponse) {
	switch v := r.URL.Query().Get("access_scope"); v {
	case "", "owned":
		return false, nil
	case "accessible":
		return true, nil
	default:
		return false, errorf(http.StatusUnprocessableEntity, "access_scope must be owned or accessible, got %q", v)
	}
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	limit, offset, e := pageParams(r, 20)
	if e != nil {
		return e
	}
	acc, e := accessScope(r)
	if e != nil {
		return e
	}
	var runs []store.RunView
	var total int
	if project := r.URL.Query().Get("project_id"); project != "" {
		all, _ := s.st.ListRuns(owner, acc, s.now(), -1, 0)
		var in []store.RunView
		for _, v := range all {
			if se, _, _, ok := s.st.Session(v.SessionID); ok && se.ProjectID == project {
				in = append(in, v)
			}
		}
		total = len(in)
		if offset < len(in) {
			runs = in[offset:][:min(limit, len(in)-offset)]
		}
	} else {
		runs, total = s.st.ListRuns(owner, acc, s.now(), limit, offset)
	}
	out := make([]runJSON, len(runs))
	for i, v := range runs {
		out[i] = toRunJSON(v)
	}
	writeJSON(w, 200, map[string]any{"training_runs": out, "cursor": tinkerapi.Cursor{Offset: offset, Limit: limit, TotalCount: total}})
	return nil
}

// visibleRun returns a run the caller may see: its own, or (with
// accessible) one with a public checkpoint. Others' runs are 404, not 403,
// so run ids do not leak.
func (s *Server) visibleRun(owner, id string, accessible bool) (store.RunView, *errorResponse) {
	v, ok := s.st.VisibleRun(id, owner, accessible, s.now())
	if !ok {
		return v, errorf(http.StatusNotFound, "Training run %s not found", id)
	}
	return v, nil
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	acc, e := accessScope(r)
	if e != nil {
		return e
	}
	v, e := s.visibleRun(owner, seg[1], acc)
	if e != nil {
		return e
	}
	writeJSON(w, 200, toRunJSON(v))
	return nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func (s *Server) runCheckpoints(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	v, e := s.visibleRun(owner, seg[1], true)
	if e != nil {
		return e
	}
	list, _ := s.st.RunCheckpoints(v.ID, s.now())
	bp := bufPool.Get().(*[]byte)
	b := append((*bp)[:0], `{"checkpoints":[`...)
	n := 0
	for i := range list {
		if v.Owner != owner && !list[i].Public {
			continue // others see only published checkpoints
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = appendCheckpoint(b, &list[i])
		n++
	}
	b = append(b, `],"cursor":null}`...)
	writeRaw(w, 200, b)
	*bp = b
	bufPool.Put(bp)
	return nil
}

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	limit, offset, e := pageParams(r, 100)
	if e != nil {
		return e
	}
	bp := bufPool.Get().(*[]byte)
	b := append((*bp)[:0], `{"checkpoints":[`...)
	first := true
	total := s.st.ListCheckpoints(owner, s.now(), limit, offset, func(c *store.Checkpoint) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendCheckpoint(b, c)
	})
	b = append(b, `],"cursor":{"offset":`...)
	b = strconv.AppendInt(b, int64(offset), 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(limit), 10)
	b = append(b, `,"total_count":`...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, "}}"...)
	writeRaw(w, 200, b)
	*bp = b
	bufPool.Put(bp)
	return nil
}

// ownedCheckpoint resolves seg = training_runs/<run>/checkpoints/<kind>/<name>/...
// to a live checkpoint owned by the caller.
func (s *Server) ownedCheckpoint(owner string, seg []string) (store.Checkpoint, *errorResponse) {
	runID, kind, name := seg[1], seg[3], seg[4]
	if kind != "weights" && kind != "sampler_weights" {
		return store.Checkpoint{}, errorf(http.StatusBadRequest, "Invalid checkpoint id %s/%s: the kind must be weights or sampler_weights", kind, name)
	}
	c, ok := s.st.Checkpoint(runID, kind, name, s.now())
	if !ok || c.Owner != owner {
		return c, errorf(http.StatusNotFound, "Checkpoint tinker://%s/%s/%s not found", runID, kind, name)
	}
	return c, nil
}

func (s *Server) deleteCkpt(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	c, e := s.ownedCheckpoint(owner, seg)
	if e != nil {
		return e
	}
	if err := s.deleteCheckpoint(c.RunID, c.Kind, c.Name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errorf(http.StatusNotFound, "Checkpoint %s not found", c.TinkerPath())
		}
		return storeFailure("delete "+c.TinkerPath(), err)
	}
	writeRaw(w, 200, []byte(`{}`))
	return nil
}

func (s *Server) setPublic(w http.ResponseWriter, owner string, seg []string, public bool) *errorResponse {
	c, e := s.ownedCheckpoint(owner, seg)
	if e != nil {
		return e
	}
	err := s.st.SetPublic(c.RunID, c.Kind, c.Name, public, s.now())
	switch {
	case errors.Is(err, store.ErrExists) && public:
		return errorf(http.StatusConflict, "Checkpoint %s is already public", c.TinkerPath())
	case errors.Is(err, store.ErrExists):
		return errorf(http.StatusConflict, "Checkpoint %s is already private", c.TinkerPath())
	case errors.Is(err, store.ErrNotFound):
		return errorf(http.StatusNotFound, "Checkpoint %s not found", c.TinkerPath())
	case err != nil:
		return storeFailure("update checkpoint", err)
	}
	writeRaw(w, 200, []byte(`{}`))
	return nil
}

func (s *Server) publish(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	return s.setPublic(w, owner, seg, true)
}

func (s *Server) unpublish(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	return s.setPublic(w, owner, seg, false)
}

func (s *Server) setTTL(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	var body map[string]json.RawMessage
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	raw, ok := body["ttl_seconds"]
	if !ok {
		return errorf(http.StatusUnprocessableEntity, "ttl_seconds is required (an integer number of seconds, or null to never expire)")
	}
	var ttl *int64
	if err := json.Unmarshal(raw, &ttl); err != nil {
		return errorf(http.StatusUnprocessableEntity, "ttl_seconds must be an integer or null")
	}
	exp, e := checkTTL("ttl_seconds", ttl, s.now())
	if e != nil {
		return e
	}
	c, e := s.ownedCheckpoint(owner, seg)
	if e != nil {
		return e
	}
	if err := s.st.SetExpiry(c.RunID, c.Kind, c.Name, exp, s.now()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errorf(http.StatusNotFound, "Checkpoint %s not found", c.TinkerPath())
		}
		return storeFailure("update checkpoint", err)
	}
	writeRaw(w, 200, []byte(`{}`))
	return nil
}

func (s *Server) weightsInfo(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	var body struct {
		TinkerPath string `json:"tinker_path"`
	}
	if e := decodeBody(r, &body); e != nil {
		return e
	}
	now := s.now()
	c, e := s.readableCheckpoint(owner, body.TinkerPath, now)
	if e != nil {
		return e
	}
	run, _ := s.st.Run(c.RunID, now)
	out := tinkerapi.WeightsInfo{BaseModel: run.BaseModel, IsLora: run.IsLora}
	if run.IsLora {
		rank, a, m, u := run.LoraRank, run.TrainAttn, run.TrainMLP, run.TrainUnembed
		out.LoraRank, out.TrainAttn, out.TrainMLP, out.TrainUnembed = &rank, &a, &m, &u
	}
	writeJSON(w, 200, out)
	return nil
}

// readableCheckpoint resolves a tinker path to a checkpoint the caller owns
// or that is public; another user's private checkpoint is as missing as one
// that does not exist.
func (s *Server) readableCheckpoint(owner, path string, now time.Time) (store.Checkpoint, *errorResponse) {
	p, err := tinkerapi.ParsePath(path)
	if err != nil {
		return store.Checkpoint{}, errorf(http.StatusBadRequest, "Invalid checkpoint tinker path %s.", path)
	}
	c, ok := s.st.Checkpoint(p.RunID, p.Kind, p.Name, now)
	if !ok || (c.Owner != owner && !c.Public) {
		return store.Checkpoint{}, errorf(http.StatusNotFound, "Checkpoint %s not found", path)
	}
	return c, nil
}
