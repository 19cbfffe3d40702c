package store

import (
	"fmt"
	"time"
)

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
