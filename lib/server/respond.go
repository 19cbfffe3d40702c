package server

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// errorResponse is what a handler answers when it fails: an HTTP status
// and a {"detail": ...} body that clients show as they are. It is the
// server's side of what the client reads as tinkerapi.APIError; which
// statuses clients retry is in docs/protocol.md, "Errors and retries".
type errorResponse struct {
	status int
	detail string
}

func (e *errorResponse) Error() string { return e.detail }

func errorf(status int, format string, args ...any) *errorResponse {
	return &errorResponse{status, fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *errorResponse) {
	writeJSON(w, e.status, map[string]string{"detail": e.detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"detail":"encode response"}`)
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// decodeBody reads a JSON request body (at most 64 MiB).
func decodeBody(r *http.Request, v any) *errorResponse {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<20))
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusUnprocessableEntity, "Invalid JSON body: %v", err)
	}
	return nil
}
