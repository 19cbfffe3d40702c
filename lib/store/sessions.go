package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Session is a client session (create_session).
type Session struct {
	ID            string
	Owner         string
	ProjectID     string
	Tags          []string
	UserMetadata  map[string]string
	SDKVersion    string
	CreatedAt     time.Time
	LastHeartbeat time.Time
}

// CreateSession stores a new session.
func (s *Store) CreateSession(se Session) error {
	defer s.beginWrite()()
	tags, _ := json.Marshal(se.Tags)
	if se.Tags == nil {
		tags = []byte("[]")
	}
	if _, err := s.db.Exec(`INSERT INTO sessions(id, owner, project_id, tags, user_metadata, sdk_version, created_at, last_heartbeat)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, se.ID, se.Owner, se.ProjectID, string(tags), encMeta(se.UserMetadata), se.SDKVersion,
		micros(se.CreatedAt), micros(se.LastHeartbeat)); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	s.mu.Lock()
	s.addSession(se)
	s.mu.Unlock()
	return nil
}

// Session returns a session with its run and sampler ids.
func (s *Store) Session(id string) (Session, []string, []string, bool) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	se := s.sess[id]
	if se == nil {
		return Session{}, nil, nil, false
	}
	return se.s, append([]string{}, se.runs...), append([]string{}, se.samplers...), true
}

// ListSessions returns the owner's session ids, newest first.
func (s *Store) ListSessions(owner string, limit, offset int) []string {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	o := s.owners[owner]
	if o == nil {
		return []string{}
	}
	return append([]string{}, page(o.sessions, limit, offset)...)
}

// Heartbeat records a session heartbeat. It is kept in memory only and
// written through at most once a minute, since it is not user data.
func (s *Store) Heartbeat(id string, now time.Time) error {
	s.mu.Lock()
	se := s.sess[id]
	if se == nil {
		s.mu.Unlock()
		return ErrNotFound
	}
	flush := now.Sub(se.s.LastHeartbeat) > time.Minute
	se.s.LastHeartbeat = now
	s.mu.Unlock()
	if flush {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		if _, err := s.db.Exec(`UPDATE sessions SET last_heartbeat = ? WHERE id = ?`, micros(now), id); err != nil {
			return fmt.Errorf("heartbeat: %w", err)
		}
	}
	return nil
}

// SetSessionProject moves a session into a project.
func (s *Store) SetSessionProject(id, project string) error {
	defer s.beginWrite()()
	res, err := s.db.Exec(`UPDATE sessions SET project_id = ? WHERE id = ?`, project, id)
	if err != nil {
		return fmt.Errorf("set project: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	s.mu.Lock()
	if se := s.sess[id]; se != nil {
		se.s.ProjectID = project
	}
	s.mu.Unlock()
	return nil
}

func (s *Store) loadSessions() error {
	return s.scanRows("sessions", `SELECT id, owner, project_id, tags, user_metadata, sdk_version, created_at, last_heartbeat
		FROM sessions ORDER BY created_at, id`, func(rows *sql.Rows) error {
		var se Session
		var tags string
		var meta sql.NullString
		var c, h int64
		if err := rows.Scan(&se.ID, &se.Owner, &se.ProjectID, &tags, &meta, &se.SDKVersion, &c, &h); err != nil {
			return err
		}
		json.Unmarshal([]byte(tags), &se.Tags)
		se.UserMetadata, se.CreatedAt, se.LastHeartbeat = decMeta(meta), fromMicros(c), fromMicros(h)
		s.addSession(se)
		return nil
	})
}
