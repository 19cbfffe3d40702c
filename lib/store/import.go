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
	defer s.beginWrite()()
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
