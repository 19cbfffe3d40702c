package store

import (
	"fmt"
	"time"
)

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
