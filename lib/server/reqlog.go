package server

import (
	"net/http"
	"time"
)

// logHTTP writes one request log line through Options.Logf: method,
// path (without the query), status, duration and who asked, as a short
// hash of the API key (the same key always gives the same hash, so one
// user's requests can be followed). Never a key, another header or a body.
func (s *Server) logHTTP(r *http.Request, path string, status int, start time.Time) {
	s.opts.Logf("%s %s %d %s user=%s", r.Method, path, status, time.Since(start).Round(time.Microsecond), userTag(r))
}

// userTag is the first 12 hex digits of the SHA-256 of the request's API
// key, or "-" without one.
func userTag(r *http.Request) string {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		return "-"
	}
	return hashKey(key)[:12]
}
