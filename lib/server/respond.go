package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tinkershell/tinker/lib/engine"
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

// decodeBody reads a JSON request body of at most maxBodyBytes.
func decodeBody(r *http.Request, v any) *errorResponse {
	return decodeBodyLimit(r, v, maxBodyBytes)
}

// decodeBodyLimit reads a JSON request body of at most limit bytes; a
// larger one is refused with 413 before it is decoded further.
func decodeBodyLimit(r *http.Request, v any, limit int64) *errorResponse {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, limit))
	if err := dec.Decode(v); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return errorf(http.StatusRequestEntityTooLarge, "request body is larger than %d bytes", limit)
		}
		return errorf(http.StatusUnprocessableEntity, "Invalid JSON body: %v", err)
	}
	return nil
}

// scrub replaces the server's own directories (the data directory, the
// Hugging Face cache, model directories) in a message meant for a client,
// which has no business knowing where the server keeps its files.
func (s *Server) scrub(msg string) string {
	for _, p := range s.private {
		if strings.Contains(msg, p.path) {
			msg = replacePath(msg, p.path, p.label)
		}
	}
	return msg
}

// replacePath replaces path in msg where it stands as a path: not inside
// a longer name ("d" in "not found"), but alone or followed by "/" and
// more of a path. A relative --data d would otherwise rewrite every d.
func replacePath(msg, path, label string) string {
	var b strings.Builder
	from := 0
	for {
		i := strings.Index(msg[from:], path)
		if i < 0 {
			b.WriteString(msg[from:])
			return b.String()
		}
		i += from
		end := i + len(path)
		if (i == 0 || !pathChar(msg[i-1])) && (end == len(msg) || !pathChar(msg[end]) || msg[end] == '/') {
			b.WriteString(msg[from:i])
			b.WriteString(label)
			from = end
		} else {
			b.WriteString(msg[from : i+1])
			from = i + 1
		}
	}
}

// pathChar is a byte that may continue a file name or path.
func pathChar(c byte) bool {
	return c == '/' || c == '.' || c == '_' || c == '-' || c == '~' || c >= 0x80 ||
		('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

type privatePath struct{ path, label string }

// privatePaths lists what scrub hides, longest first so a directory inside
// another is replaced before its parent.
func privatePaths(dataDir string, extra []string) []privatePath {
	var out []privatePath
	add := func(p, label string) {
		if p == "" || p == "." || p == "/" {
			return
		}
		out = append(out, privatePath{p, label})
		if abs, err := filepath.Abs(p); err == nil && abs != p {
			out = append(out, privatePath{abs, label})
		}
	}
	add(dataDir, "<data dir>")
	for _, d := range engine.HFCacheDirs() {
		add(d, "<HF cache>")
	}
	for _, d := range extra {
		add(d, "<model dir>")
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].path) > len(out[j].path) })
	return out
}
