package store

import (
	"database/sql"
	"fmt"
	"sort"
	"time"
)

// Run is a training run (a LoRA model).
type Run struct {
	ID              string
	SessionID       string
	Owner           string
	BaseModel       string
	IsLora          bool
	LoraRank        int
	TrainAttn       bool
	TrainMLP        bool
	TrainUnembed    bool
	Seed            uint64
	Corrupted       bool
	UserMetadata    map[string]string
	CreatedAt       time.Time
	LastRequestTime time.Time
}

const insertRunSQL = `INSERT INTO runs(id, session_id, owner, base_model, is_lora, lora_rank, train_attn, train_mlp, train_unembed,
	seed, corrupted, user_metadata, created_at, last_request_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func runArgs(r *Run) []any {
	return []any{r.ID, r.SessionID, r.Owner, r.BaseModel, b2i(r.IsLora), r.LoraRank, b2i(r.TrainAttn), b2i(r.TrainMLP),
		b2i(r.TrainUnembed), int64(r.Seed), b2i(r.Corrupted), encMeta(r.UserMetadata), micros(r.CreatedAt), micros(r.LastRequestTime)}
}

// CreateRun stores a new training run.
func (s *Store) CreateRun(r Run) error {
	defer s.beginWrite()()
	s.mu.RLock()
	_, dup := s.runs[r.ID]
	s.mu.RUnlock()
	if dup {
		return fmt.Errorf("training run %s: %w", r.ID, ErrExists)
	}
	if _, err := s.db.Exec(insertRunSQL, runArgs(&r)...); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	s.mu.Lock()
	s.addRun(r)
	s.mu.Unlock()
	return nil
}

// RunView is a run with its latest checkpoints, as listings show it.
type RunView struct {
	Run
	LastCheckpoint        *Checkpoint
	LastSamplerCheckpoint *Checkpoint
}

// view is re as viewer sees it: another owner's run shows only its
// public checkpoints as the latest ones ("" views as the owner).
func (s *Store) view(re *runEntry, viewer string, now time.Time) RunView {
	v := RunView{Run: re.run}
	foreign := viewer != "" && viewer != re.run.Owner
	for i := len(re.ckpts) - 1; i >= 0 && (v.LastCheckpoint == nil || v.LastSamplerCheckpoint == nil); i-- {
		c := re.ckpts[i]
		if c.Expired(now) || (foreign && !c.Public) {
			continue
		}
		if c.Kind == "weights" && v.LastCheckpoint == nil {
			cc := *c
			v.LastCheckpoint = &cc
		} else if c.Kind == "sampler_weights" && v.LastSamplerCheckpoint == nil {
			cc := *c
			v.LastSamplerCheckpoint = &cc
		}
	}
	return v
}

// Run returns one run.
func (s *Store) Run(id string, now time.Time) (RunView, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	re := s.runs[id]
	if re == nil {
		return RunView{}, false
	}
	return s.view(re, "", now), true
}

// VisibleRun returns a run as viewer may see it: viewer's own run, or, with
// accessible, another owner's run that has a live public checkpoint, showing
// only public checkpoints as its latest.
func (s *Store) VisibleRun(id, viewer string, accessible bool, now time.Time) (RunView, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	re := s.runs[id]
	if re == nil || (re.run.Owner != viewer && !(accessible && hasPublic(re, now))) {
		return RunView{}, false
	}
	return s.view(re, viewer, now), true
}

func hasPublic(re *runEntry, now time.Time) bool {
	for _, c := range re.ckpts {
		if c.Public && !c.Expired(now) {
			return true
		}
	}
	return false
}

// ListRuns lists the owner's runs newest first; with accessible, runs of
// other owners that have a live public checkpoint are included after them.
func (s *Store) ListRuns(owner string, accessible bool, now time.Time, limit, offset int) ([]RunView, int) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var list []*runEntry
	if o := s.owners[owner]; o != nil {
		list = o.runs
	}
	if accessible {
		var others []*runEntry
		for _, re := range s.runs {
			if re.run.Owner != owner && hasPublic(re, now) {
				others = append(others, re)
			}
		}
		sort.Slice(others, func(i, j int) bool {
			if !others[i].run.CreatedAt.Equal(others[j].run.CreatedAt) {
				return others[i].run.CreatedAt.After(others[j].run.CreatedAt)
			}
			return others[i].run.ID < others[j].run.ID
		})
		list = append(append([]*runEntry{}, list...), others...)
	}
	out := []RunView{}
	for _, re := range page(list, limit, offset) {
		out = append(out, s.view(re, owner, now))
	}
	return out, len(list)
}

// TouchRun updates a run's last_request_time (in memory; persisted with the
// next checkpoint write or at most once a minute).
func (s *Store) TouchRun(id string, now time.Time) {
	s.mu.Lock()
	re := s.runs[id]
	if re == nil {
		s.mu.Unlock()
		return
	}
	flush := now.Sub(re.run.LastRequestTime) > time.Minute
	re.run.LastRequestTime = now
	s.mu.Unlock()
	if flush {
		s.writeMu.Lock()
		s.db.Exec(`UPDATE runs SET last_request_time = ? WHERE id = ?`, micros(now), id)
		s.writeMu.Unlock()
	}
}

// SetRunWeights records that a run's weights now come from seed (after
// load_weights of a checkpoint), so later saves reproduce those weights.
func (s *Store) SetRunWeights(runID string, seed uint64, now time.Time) error {
	defer s.beginWrite()()
	res, err := s.db.Exec(`UPDATE runs SET seed = ?, last_request_time = ? WHERE id = ?`, int64(seed), micros(now), runID)
	if err != nil {
		return fmt.Errorf("load weights: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	s.mu.Lock()
	if re := s.runs[runID]; re != nil {
		re.run.Seed, re.run.LastRequestTime = seed, now
	}
	s.mu.Unlock()
	return nil
}

func (s *Store) loadRuns() error {
	return s.scanRows("runs", `SELECT id, session_id, owner, base_model, is_lora, lora_rank, train_attn, train_mlp, train_unembed,
		seed, corrupted, user_metadata, created_at, last_request_time FROM runs ORDER BY created_at, id`, func(rows *sql.Rows) error {
		var r Run
		var meta sql.NullString
		var c, l, seed int64
		if err := rows.Scan(&r.ID, &r.SessionID, &r.Owner, &r.BaseModel, &r.IsLora, &r.LoraRank, &r.TrainAttn, &r.TrainMLP,
			&r.TrainUnembed, &seed, &r.Corrupted, &meta, &c, &l); err != nil {
			return err
		}
		r.Seed, r.UserMetadata, r.CreatedAt, r.LastRequestTime = uint64(seed), decMeta(meta), fromMicros(c), fromMicros(l)
		s.addRun(r)
		return nil
	})
}
