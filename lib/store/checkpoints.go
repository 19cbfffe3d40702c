package store

import (
	"database/sql"
	"fmt"
	"sort"
	"time"
)

// Checkpoint is a saved checkpoint of a run.
type Checkpoint struct {
	RunID     string
	Kind      string // "weights" | "sampler_weights"
	Name      string
	Owner     string
	Time      time.Time
	SizeBytes int64
	Public    bool
	ExpiresAt *time.Time
	Seed      uint64
	// FilesOnly: the files hold trained or imported weights, so they are
	// the only copy; without it the files are the LoRA initialisation from
	// Seed and can be generated again.
	FilesOnly bool
}

// ID is the checkpoint id, e.g. "weights/0001".
func (c *Checkpoint) ID() string { return c.Kind + "/" + c.Name }

// Type is "training" or "sampler".
func (c *Checkpoint) Type() string {
	if c.Kind == "sampler_weights" {
		return "sampler"
	}
	return "training"
}

// TinkerPath is tinker://<run>/<kind>/<name>.
func (c *Checkpoint) TinkerPath() string { return "tinker://" + c.RunID + "/" + c.Kind + "/" + c.Name }

// Expired reports whether the checkpoint has expired at now.
func (c *Checkpoint) Expired(now time.Time) bool {
	return c.ExpiresAt != nil && !c.ExpiresAt.After(now)
}

// RunCheckpoints lists a run's live checkpoints, oldest first (the order the
// service uses for the per-run listing).
func (s *Store) RunCheckpoints(runID string, now time.Time) ([]Checkpoint, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	re := s.runs[runID]
	if re == nil {
		return nil, false
	}
	out := make([]Checkpoint, 0, len(re.ckpts))
	for _, c := range re.ckpts {
		if !c.Expired(now) {
			out = append(out, *c)
		}
	}
	return out, true
}

// ListCheckpoints pages through the owner's live checkpoints, newest first.
// fn is called for each one under the read lock (so callers can encode
// without copying); it returns the total count.
func (s *Store) ListCheckpoints(owner string, now time.Time, limit, offset int, fn func(*Checkpoint)) int {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.owners[owner]
	if o == nil {
		return 0
	}
	list := o.ckpts
	if o.expiring > 0 {
		live := make([]*Checkpoint, 0, len(list))
		for _, c := range list {
			if !c.Expired(now) {
				live = append(live, c)
			}
		}
		list = live
	}
	for _, c := range page(list, limit, offset) {
		fn(c)
	}
	return len(list)
}

// Checkpoint returns one live checkpoint.
func (s *Store) Checkpoint(runID, kind, name string, now time.Time) (Checkpoint, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.find(runID, kind, name)
	if c == nil || c.Expired(now) {
		return Checkpoint{}, false
	}
	return *c, true
}

func (s *Store) find(runID, kind, name string) *Checkpoint {
	re := s.runs[runID]
	if re == nil {
		return nil
	}
	for _, c := range re.ckpts {
		if c.Kind == kind && c.Name == name {
			return c
		}
	}
	return nil
}

// OwnerCheckpoints returns all of an owner's checkpoints, including expired
// ones not yet swept (for storage accounting).
func (s *Store) OwnerCheckpoints(owner string) []Checkpoint {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.owners[owner]
	if o == nil {
		return nil
	}
	out := make([]Checkpoint, len(o.ckpts))
	for i, c := range o.ckpts {
		out[i] = *c
	}
	return out
}

const insertCkptSQL = `INSERT INTO checkpoints(run_id, kind, name, owner, created_at, size_bytes, public, expires_at, seed, files_only)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func ckptArgs(c *Checkpoint) []any {
	var exp any
	if c.ExpiresAt != nil {
		exp = micros(*c.ExpiresAt)
	}
	return []any{c.RunID, c.Kind, c.Name, c.Owner, micros(c.Time), c.SizeBytes, b2i(c.Public), exp, int64(c.Seed), b2i(c.FilesOnly)}
}

// PutCheckpoint stores a new checkpoint. An existing live checkpoint of the
// same name gives ErrExists unless overwrite; an expired one is replaced.
func (s *Store) PutCheckpoint(c Checkpoint, overwrite bool, now time.Time) error {
	defer s.beginWrite()()
	s.mu.RLock()
	re := s.runs[c.RunID]
	old := s.find(c.RunID, c.Kind, c.Name)
	s.mu.RUnlock()
	if re == nil {
		return fmt.Errorf("training run %s: %w", c.RunID, ErrNotFound)
	}
	if old != nil && !overwrite && !old.Expired(now) {
		return fmt.Errorf("checkpoint %s: %w", c.TinkerPath(), ErrExists)
	}
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	defer tx.Rollback()
	if old != nil {
		if _, err := tx.Exec(`DELETE FROM checkpoints WHERE run_id = ? AND kind = ? AND name = ?`, c.RunID, c.Kind, c.Name); err != nil {
			return fmt.Errorf("save checkpoint: %w", err)
		}
	}
	if _, err := tx.Exec(insertCkptSQL, ckptArgs(&c)...); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if _, err := tx.Exec(`UPDATE runs SET last_request_time = ? WHERE id = ?`, micros(now), c.RunID); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	s.mu.Lock()
	if old != nil {
		s.removeCkptMem(old)
	}
	cc := c
	s.insertCkptMem(&cc)
	re.run.LastRequestTime = now
	s.mu.Unlock()
	return nil
}

// DeleteCheckpoint removes a checkpoint row (callers remove files).
func (s *Store) DeleteCheckpoint(runID, kind, name string) error {
	defer s.beginWrite()()
	s.mu.RLock()
	c := s.find(runID, kind, name)
	s.mu.RUnlock()
	if c == nil {
		return ErrNotFound
	}
	if _, err := s.db.Exec(`DELETE FROM checkpoints WHERE run_id = ? AND kind = ? AND name = ?`, runID, kind, name); err != nil {
		return fmt.Errorf("delete checkpoint: %w", err)
	}
	s.mu.Lock()
	s.removeCkptMem(c)
	s.mu.Unlock()
	return nil
}

// findLive is find for a mutation of a live checkpoint: the caller holds
// writeMu, so the checkpoint's fields stay put until it changes them.
func (s *Store) findLive(runID, kind, name string, now time.Time) *Checkpoint {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if c := s.find(runID, kind, name); c != nil && !c.Expired(now) {
		return c
	}
	return nil
}

// SetPublic publishes or unpublishes; it returns ErrExists when the
// checkpoint is already in that state.
func (s *Store) SetPublic(runID, kind, name string, public bool, now time.Time) error {
	defer s.beginWrite()()
	c := s.findLive(runID, kind, name, now)
	if c == nil {
		return ErrNotFound
	}
	if c.Public == public {
		return ErrExists
	}
	if _, err := s.db.Exec(`UPDATE checkpoints SET public = ? WHERE run_id = ? AND kind = ? AND name = ?`, b2i(public), runID, kind, name); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	s.mu.Lock()
	c.Public = public
	s.mu.Unlock()
	return nil
}

// SetExpiry sets or clears (nil) a checkpoint's expiry.
func (s *Store) SetExpiry(runID, kind, name string, exp *time.Time, now time.Time) error {
	defer s.beginWrite()()
	c := s.findLive(runID, kind, name, now)
	if c == nil {
		return ErrNotFound
	}
	var v any
	if exp != nil {
		v = micros(*exp)
	}
	if _, err := s.db.Exec(`UPDATE checkpoints SET expires_at = ? WHERE run_id = ? AND kind = ? AND name = ?`, v, runID, kind, name); err != nil {
		return fmt.Errorf("set ttl: %w", err)
	}
	s.mu.Lock()
	o := s.owner(c.Owner)
	if c.ExpiresAt != nil {
		o.expiring--
	}
	if exp != nil {
		e := exp.UTC().Truncate(time.Microsecond)
		c.ExpiresAt = &e
		o.expiring++
	} else {
		c.ExpiresAt = nil
	}
	s.mu.Unlock()
	return nil
}

// ExpiredCheckpoints lists checkpoints whose expiry has passed.
func (s *Store) ExpiredCheckpoints(now time.Time) []Checkpoint {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Checkpoint
	for _, o := range s.owners {
		if o.expiring == 0 {
			continue
		}
		for _, c := range o.ckpts {
			if c.Expired(now) {
				out = append(out, *c)
			}
		}
	}
	return out
}

// loadCheckpoints appends every checkpoint to its run's and owner's lists,
// then sorts each list once (faster than sorted inserts for many rows).
func (s *Store) loadCheckpoints() error {
	err := s.scanRows("checkpoints", `SELECT run_id, kind, name, owner, created_at, size_bytes, public, expires_at, seed,
		files_only FROM checkpoints`, func(rows *sql.Rows) error {
		c := &Checkpoint{}
		var t, seed int64
		var exp sql.NullInt64
		if err := rows.Scan(&c.RunID, &c.Kind, &c.Name, &c.Owner, &t, &c.SizeBytes, &c.Public, &exp, &seed, &c.FilesOnly); err != nil {
			return err
		}
		c.Time, c.Seed = fromMicros(t), uint64(seed)
		if exp.Valid {
			e := fromMicros(exp.Int64)
			c.ExpiresAt = &e
		}
		re := s.runs[c.RunID]
		if re == nil {
			return nil
		}
		re.ckpts = append(re.ckpts, c)
		o := s.owner(c.Owner)
		o.ckpts = append(o.ckpts, c)
		if c.ExpiresAt != nil {
			o.expiring++
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, re := range s.runs {
		sort.Slice(re.ckpts, func(i, j int) bool { return ckptLess(re.ckpts[j], re.ckpts[i]) })
	}
	for _, o := range s.owners {
		sort.Slice(o.ckpts, func(i, j int) bool { return ckptLess(o.ckpts[i], o.ckpts[j]) })
	}
	return nil
}
