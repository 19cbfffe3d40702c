package store

import (
	"database/sql"
	"fmt"
	"time"
)

// EnsureUser records a user URN and the hash of its API key.
func (s *Store) EnsureUser(urn, keyHash string, now time.Time) error {
	s.sync()
	s.mu.RLock()
	_, ok := s.users[urn]
	s.mu.RUnlock()
	if ok {
		return nil
	}
	defer s.beginWrite()()
	if _, err := s.db.Exec(`INSERT OR IGNORE INTO users(urn, key_hash, created_at) VALUES (?, ?, ?)`, urn, keyHash, micros(now)); err != nil {
		return fmt.Errorf("record user: %w", err)
	}
	s.mu.Lock()
	s.users[urn] = keyHash
	s.mu.Unlock()
	return nil
}

func (s *Store) loadUsers() error {
	return s.scanRows("users", `SELECT urn, key_hash FROM users`, func(rows *sql.Rows) error {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			return err
		}
		s.users[u] = h
		return nil
	})
}
