package store

import (
	"database/sql"
	"fmt"
	"sort"
	"time"
)

// Importer adds many rows in one transaction with prepared statements
// (tinker serve import). Nothing is visible until Import returns nil.
type Importer struct {
	tx                        *sql.Tx
	sessStmt, runStmt, ckStmt *sql.Stmt
	sessions                  []Session
	runs                      []Run
	ckpts                     []*Checkpoint
	users                     map[string]string
	s                         *Store
	seenRun                   map[string]bool
	seenCkpt                  map[string]bool
}

// Import runs fn inside one transaction and publishes the rows on success.
func (s *Store) Import(now time.Time, fn func(*Importer) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer tx.Rollback()
	im := &Importer{tx: tx, s: s, users: map[string]string{}, seenRun: map[string]bool{}, seenCkpt: map[string]bool{}}
	if im.sessStmt, err = tx.Prepare(`INSERT INTO sessions(id, owner, project_id, tags, user_metadata, sdk_version, created_at, last_heartbeat)
		VALUES (?, ?, '', '[]', '{}', '', ?, ?)`); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if im.runStmt, err = tx.Prepare(insertRunSQL); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if im.ckStmt, err = tx.Prepare(insertCkptSQL); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := fn(im); err != nil {
		return err
	}
	for urn, h := range im.users {
		if _, err := tx.Exec(`INSERT OR IGNORE INTO users(urn, key_hash, created_at) VALUES (?, ?, ?)`, urn, h, micros(now)); err != nil {
			return fmt.Errorf("import user: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("import commit: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for urn, h := range im.users {
		s.users[urn] = h
	}
	for _, se := range im.sessions {
		s.addSession(se)
	}
	for _, r := range im.runs {
		s.addRun(r)
	}
	touched := map[*ownerEntry]bool{}
	for _, c := range im.ckpts {
		re := s.runs[c.RunID]
		re.ckpts = append(re.ckpts, c)
		o := s.owner(c.Owner)
		o.ckpts = append(o.ckpts, c)
		if c.ExpiresAt != nil {
			o.expiring++
		}
		touched[o] = true
	}
	for _, r := range im.runs {
		re := s.runs[r.ID]
		sort.Slice(re.ckpts, func(i, j int) bool { return ckptLess(re.ckpts[j], re.ckpts[i]) })
	}
	for o := range touched {
		sort.Slice(o.ckpts, func(i, j int) bool { return ckptLess(o.ckpts[i], o.ckpts[j]) })
	}
	return nil
}

// AddUser records a user (URN and API-key hash).
func (im *Importer) AddUser(urn, keyHash string) { im.users[urn] = keyHash }

// AddSession adds a session (runs refer to it).
func (im *Importer) AddSession(se Session) error {
	if _, err := im.sessStmt.Exec(se.ID, se.Owner, micros(se.CreatedAt), micros(se.LastHeartbeat)); err != nil {
		return fmt.Errorf("import session %s: %w", se.ID, err)
	}
	im.sessions = append(im.sessions, se)
	return nil
}

// AddRun adds a training run; its id must be new.
func (im *Importer) AddRun(r Run) error {
	im.s.mu.RLock()
	_, dup := im.s.runs[r.ID]
	im.s.mu.RUnlock()
	if dup || im.seenRun[r.ID] {
		return fmt.Errorf("import run %s: %w", r.ID, ErrExists)
	}
	if _, err := im.runStmt.Exec(runArgs(&r)...); err != nil {
		return fmt.Errorf("import run %s: %w", r.ID, err)
	}
	im.seenRun[r.ID] = true
	im.runs = append(im.runs, r)
	return nil
}

// AddCheckpoint adds a checkpoint of a run added in this import.
func (im *Importer) AddCheckpoint(c Checkpoint) error {
	if !im.seenRun[c.RunID] {
		return fmt.Errorf("import checkpoint %s: run not part of this import", c.TinkerPath())
	}
	if im.seenCkpt[c.TinkerPath()] {
		return fmt.Errorf("import checkpoint %s: %w", c.TinkerPath(), ErrExists)
	}
	if _, err := im.ckStmt.Exec(ckptArgs(&c)...); err != nil {
		return fmt.Errorf("import checkpoint %s: %w", c.TinkerPath(), err)
	}
	im.seenCkpt[c.TinkerPath()] = true
	cc := c
	im.ckpts = append(im.ckpts, &cc)
	return nil
}

// LoggedRequest is one API request of a session (for trace export).
type LoggedRequest struct {
	Name   string
	Start  time.Time
	Dur    time.Duration
	Status int
	Detail string
}

// LogRequest appends to a session's request log.
func (s *Store) LogRequest(sessionID string, r LoggedRequest) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.db.Exec(`INSERT INTO request_log(session_id, name, start_us, dur_us, status, detail) VALUES (?, ?, ?, ?, ?, ?)`,
		sessionID, r.Name, micros(r.Start), r.Dur.Microseconds(), r.Status, r.Detail); err != nil {
		return fmt.Errorf("log request: %w", err)
	}
	return nil
}

// SessionRequests returns a session's request log in time order.
func (s *Store) SessionRequests(sessionID string) ([]LoggedRequest, error) {
	rows, err := s.db.Query(`SELECT name, start_us, dur_us, status, detail FROM request_log WHERE session_id = ? ORDER BY start_us, id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("read request log: %w", err)
	}
	defer rows.Close()
	var out []LoggedRequest
	for rows.Next() {
		var r LoggedRequest
		var st, d int64
		if err := rows.Scan(&r.Name, &st, &d, &r.Status, &r.Detail); err != nil {
			return nil, fmt.Errorf("read request log: %w", err)
		}
		r.Start, r.Dur = fromMicros(st), time.Duration(d)*time.Microsecond
		out = append(out, r)
	}
	return out, rows.Err()
}

// UsageEvent is one metered event (tokens trained or sampled).
type UsageEvent struct {
	At         time.Time
	Owner      string
	SessionID  string
	BaseModel  string
	Type       string // training | sampling_prefill | sampling_sample
	TokenCount int64
	Cached     bool
}

// RecordUsage stores a usage event.
func (s *Store) RecordUsage(e UsageEvent) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := s.db.Exec(`INSERT INTO usage(at, owner, session_id, base_model, type, token_count, cached) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		micros(e.At), e.Owner, e.SessionID, e.BaseModel, e.Type, e.TokenCount, b2i(e.Cached)); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	return nil
}

// Usage returns the owner's usage events in [from, to).
func (s *Store) Usage(owner string, from, to time.Time) ([]UsageEvent, error) {
	rows, err := s.db.Query(`SELECT at, session_id, base_model, type, token_count, cached FROM usage
		WHERE owner = ? AND at >= ? AND at < ? ORDER BY at, id`, owner, micros(from), micros(to))
	if err != nil {
		return nil, fmt.Errorf("read usage: %w", err)
	}
	defer rows.Close()
	var out []UsageEvent
	for rows.Next() {
		e := UsageEvent{Owner: owner}
		var at int64
		if err := rows.Scan(&at, &e.SessionID, &e.BaseModel, &e.Type, &e.TokenCount, &e.Cached); err != nil {
			return nil, fmt.Errorf("read usage: %w", err)
		}
		e.At = fromMicros(at)
		out = append(out, e)
	}
	return out, rows.Err()
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

// SetRunWeights records that a run's weights now come from seed (after
// load_weights of a checkpoint), so later saves reproduce those weights.
func (s *Store) SetRunWeights(runID string, seed uint64, now time.Time) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
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
