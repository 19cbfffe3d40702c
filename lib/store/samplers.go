package store

import (
	"database/sql"
	"fmt"
	"time"
)

// Sampler is a sampling session.
type Sampler struct {
	ID        string
	SessionID string
	Owner     string
	BaseModel string
	ModelPath string
	CreatedAt time.Time
}

// CreateSampler stores a sampling session.
func (s *Store) CreateSampler(sp Sampler) error {
	defer s.beginWrite()()
	if _, err := s.db.Exec(`INSERT INTO samplers(id, session_id, owner, base_model, model_path, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		sp.ID, sp.SessionID, sp.Owner, sp.BaseModel, sp.ModelPath, micros(sp.CreatedAt)); err != nil {
		return fmt.Errorf("create sampler: %w", err)
	}
	s.mu.Lock()
	s.addSampler(&sp)
	s.mu.Unlock()
	return nil
}

// Sampler returns a sampling session.
func (s *Store) Sampler(id string) (Sampler, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	sp := s.samps[id]
	if sp == nil {
		return Sampler{}, false
	}
	return *sp, true
}

func (s *Store) loadSamplers() error {
	return s.scanRows("samplers", `SELECT id, session_id, owner, base_model, model_path, created_at
		FROM samplers ORDER BY created_at, id`, func(rows *sql.Rows) error {
		sp := &Sampler{}
		var c int64
		if err := rows.Scan(&sp.ID, &sp.SessionID, &sp.Owner, &sp.BaseModel, &sp.ModelPath, &c); err != nil {
			return err
		}
		sp.CreatedAt = fromMicros(c)
		s.addSampler(sp)
		return nil
	})
}
