package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Archives are downloaded from /files/ URLs signed with the data
// directory's secret, so the download itself needs no API key. See
// docs/protocol.md, "Archives and downloads".

// signedURLTTL is how long archive and trace download URLs stay valid.
const signedURLTTL = time.Hour

func (s *Server) sign(token string, exp int64) string {
	m := hmac.New(sha256.New, s.st.Secret())
	fmt.Fprintf(m, "%s.%d", token, exp)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// signedURL returns an absolute URL on this server for a file token.
func (s *Server) signedURL(r *http.Request, fields []string, filename string) (string, time.Time) {
	token := base64.RawURLEncoding.EncodeToString([]byte(strings.Join(fields, "\x00")))
	exp := s.now().Add(signedURLTTL).Truncate(time.Second)
	u := "http://" + r.Host + "/files/" + token + "/" + url.PathEscape(filename) +
		"?exp=" + strconv.FormatInt(exp.Unix(), 10) + "&sig=" + s.sign(token, exp.Unix())
	return u, exp
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request, owner string, seg []string) *errorResponse {
	runID, kind, name := seg[1], seg[3], seg[4]
	c, ok := s.st.Checkpoint(runID, kind, name, s.now())
	if !ok || (c.Owner != owner && !c.Public) {
		return errorf(http.StatusNotFound, "Checkpoint tinker://%s/%s/%s not found", runID, kind, name)
	}
	if err := s.archives.materialise(c, c.SizeBytes > s.opts.ArchiveSyncLimit); err != nil {
		if errors.Is(err, errArchivePending) {
			w.Header().Set("Retry-After", "5")
			return errorf(http.StatusServiceUnavailable, "Checkpoint archive is being generated; retry shortly")
		}
		return storeFailure("generate archive for "+c.TinkerPath(), err)
	}
	u, exp := s.signedURL(r, []string{"c", runID, kind, name}, runID+"_"+kind+"_"+name+".tar")
	h := w.Header()
	h.Set("Location", u)
	h.Set("Expires", exp.UTC().Format(http.TimeFormat))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusFound)
	return nil
}

// serveFile answers GET /files/<token>/<name>?exp=&sig= without auth, with
// Range support. It returns the status for the access log.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) int {
	fail := func(status int, msg string) int {
		writeError(w, errorf(status, "%s", msg))
		return status
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return fail(http.StatusMethodNotAllowed, "Method Not Allowed")
	}
	token, _, _ := strings.Cut(rest, "/")
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(s.sign(token, exp))) {
		return fail(http.StatusForbidden, "Invalid signature: request a new download URL")
	}
	if s.now().Unix() >= exp {
		return fail(http.StatusForbidden, "This download URL has expired: request a new one")
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return fail(http.StatusForbidden, "Invalid signature: request a new download URL")
	}
	f := strings.Split(string(raw), "\x00")
	switch {
	case len(f) == 4 && f[0] == "c":
		return s.serveArchive(w, r, f[1], f[2], f[3])
	case len(f) == 2 && f[0] == "t":
		return s.traces.serve(w, r, f[1])
	}
	return fail(http.StatusNotFound, "Not Found")
}

func (s *Server) serveArchive(w http.ResponseWriter, r *http.Request, runID, kind, name string) int {
	c, ok := s.st.Checkpoint(runID, kind, name, s.now())
	if !ok {
		writeError(w, errorf(http.StatusNotFound, "Checkpoint no longer exists"))
		return http.StatusNotFound
	}
	if err := s.archives.materialise(c, false); err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "generate archive: %v", err))
		return http.StatusInternalServerError
	}
	vt, err := openTar(s.checkpointDir(runID, kind, name), c.Time)
	if err != nil {
		writeError(w, errorf(http.StatusInternalServerError, "open archive: %v", err))
		return http.StatusInternalServerError
	}
	defer vt.close()
	w.Header().Set("Content-Type", "application/x-tar")
	if r.Method == http.MethodGet && r.Header.Get("Range") == "" && r.Header.Get("If-Modified-Since") == "" && r.Header.Get("If-None-Match") == "" {
		// Whole-archive fast path: stream the parts in order so the file
		// contents go out with sendfile instead of through a user-space copy.
		h := w.Header()
		h.Set("Content-Length", strconv.FormatInt(vt.size, 10))
		h.Set("Accept-Ranges", "bytes")
		h.Set("Last-Modified", c.Time.UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusOK)
		vt.writeTo(w)
		return http.StatusOK
	}
	rec := &recorder{ResponseWriter: w, status: 200}
	http.ServeContent(rec, r, "", c.Time, io.NewSectionReader(vt, 0, vt.size))
	return rec.status
}
