package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

const (
	cookieName  = "tinker_console"
	sessionIdle = 12 * time.Hour // a session unused this long ends
	maxSessions = 64             // beyond it the least recently used ends
	maxKeyBytes = 4096           // an api_key longer than this is refused unread
)

// session is one signed-in browser. The API key lives only here, inside
// the client; the browser holds a random id naming the session.
type session struct {
	csrf   string
	client *tinkerapi.Client
	seen   time.Time

	mu       sync.Mutex         // guards tinker and samplers
	tinker   *tinkerapi.Session // opened by the first sample
	samplers *ops.Samplers      // the sampling sessions opened in tinker
}

// sessions maps the SHA-256 of each cookie value to its session, so a
// lookup never compares secrets byte by byte.
type sessions struct {
	c  *Console
	mu sync.Mutex
	m  map[[32]byte]*session
}

func newSessions(c *Console) *sessions {
	return &sessions{c: c, m: map[[32]byte]*session{}}
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// get returns the live session the request's cookie names, or nil.
func (ss *sessions) get(r *http.Request) *session {
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return nil
	}
	id := sha256.Sum256([]byte(ck.Value))
	now := ss.c.opts.Now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
	if s == nil {
		return nil
	}
	if now.Sub(s.seen) > sessionIdle {
		delete(ss.m, id)
		go s.close()
		return nil
	}
	s.seen = now
	return s
}

// add stores s and returns the cookie value naming it, ending the least
// recently used session when there are too many.
func (ss *sessions) add(s *session) string {
	value := randomToken()
	now := ss.c.opts.Now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for id, o := range ss.m {
		if now.Sub(o.seen) > sessionIdle {
			delete(ss.m, id)
			go o.close()
		}
	}
	if len(ss.m) >= maxSessions {
		var oldest [32]byte
		for id, o := range ss.m {
			if ss.m[oldest] == nil || o.seen.Before(ss.m[oldest].seen) {
				oldest = id
			}
		}
		go ss.m[oldest].close()
		delete(ss.m, oldest)
	}
	ss.m[sha256.Sum256([]byte(value))] = s
	return value
}

// end removes the session the request's cookie names.
func (ss *sessions) end(r *http.Request) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return
	}
	id := sha256.Sum256([]byte(ck.Value))
	ss.mu.Lock()
	s := ss.m[id]
	delete(ss.m, id)
	ss.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// close ends the session's Tinker session, if sampling opened one.
func (s *session) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tinker != nil {
		s.tinker.Close()
		s.tinker = nil
	}
	s.client.CloseIdleConnections()
}

// tinkerSession opens (once, and again if it ended) the Tinker session
// sampling runs in, with the sampling sessions opened in it.
func (s *session) tinkerSession(ctx context.Context) (*tinkerapi.Session, *ops.Samplers, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tinker == nil || s.tinker.Err() != nil {
		ts, err := s.client.CreateSession(ctx, tinkerapi.SessionOptions{Tags: []string{"console"}})
		if err != nil {
			return nil, nil, err
		}
		if s.tinker != nil {
			s.tinker.Close()
		}
		s.tinker, s.samplers = ts, &ops.Samplers{}
	}
	return s.tinker, s.samplers, nil
}

func (c *Console) setCookie(w http.ResponseWriter, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// login checks the posted api_key against the API and, when it is
// accepted, starts a session. The key is never echoed back.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "Refused: sign in from the console's own page.", http.StatusForbidden)
		return
	}
	key := strings.TrimSpace(r.PostFormValue("api_key"))
	if key == "" || len(key) > maxKeyBytes {
		c.write(w, http.StatusUnauthorized, page{Title: "Sign in", Error: "Enter your Tinker API key."}, signinPage)
		return
	}
	client, err := tinkerapi.New(tinkerapi.Config{BaseURL: c.opts.BaseURL, APIKey: key, HTTPClient: c.opts.HTTPClient, MaxRetryTime: 10 * time.Second})
	if err == nil {
		_, err = client.ListTrainingRuns(r.Context(), 1, 0, "")
	}
	if err != nil {
		c.write(w, http.StatusUnauthorized, page{Title: "Sign in", Error: signInError(err)}, signinPage)
		return
	}
	s := &session{csrf: randomToken(), client: client, seen: c.opts.Now()}
	c.setCookie(w, c.sessions.add(s), int(sessionIdle/time.Second))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInError says why a key was not accepted, without repeating it.
func signInError(err error) string {
	var ae *tinkerapi.APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
		return "That API key was not accepted. Check it and try again."
	}
	var ue *tinkerapi.UserError
	if errors.As(err, &ue) {
		return "That API key cannot be used: " + ue.Msg
	}
	return "The Tinker API could not be reached to check the key; try again."
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, _ *session) {
	c.sessions.end(r)
	c.setCookie(w, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
