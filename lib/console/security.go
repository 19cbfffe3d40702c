package console

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// csp allows the console's own stylesheet, script and form targets and
// nothing else: no inline script or style, no other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// maxFormBytes bounds every request body the console reads.
const maxFormBytes = 256 << 10

// guard sets the security headers on every console response and refuses
// clients and Host names that are not loopback (unless AllowRemote). The
// Host check keeps a DNS-rebinding page from reaching the console.
func (c *Console) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/console/static/") {
			h.Set("Cache-Control", "no-store")
		}
		if !c.opts.AllowRemote && (!loopbackAddr(r.RemoteAddr) || !loopbackHost(r.Host)) {
			http.Error(w, "The console answers only on loopback (open it at http://127.0.0.1:PORT/).", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		next.ServeHTTP(w, r)
	})
}

// loopbackAddr reports whether a RemoteAddr (host:port) is a loopback IP.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether a POST comes from the console's own pages:
// its Origin (or, without one, its Referer) names the request's host.
// A browser always sends one of them with a form post from a page.
func sameOrigin(r *http.Request) bool {
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	u, err := url.Parse(src)
	return err == nil && src != "" && u.Host == r.Host
}

// signedIn runs h for a request with a live session. Without one, the
// root pages show the sign-in form and every other page answers 401 with
// no data.
func (c *Console) signedIn(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := c.sessions.get(r)
		if s == nil {
			c.signInRequired(w, r, "")
			return
		}
		h(w, r, s)
	}
}

// changes runs h for a POST from the console's own page, with a live
// session and that session's CSRF token; anything else is refused before
// h sees it.
func (c *Console) changes(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			http.Error(w, "Refused: this form was not sent from the console's own page.", http.StatusForbidden)
			return
		}
		s := c.sessions.get(r)
		if s == nil {
			c.signInRequired(w, r, "")
			return
		}
		token := r.PostFormValue("csrf")
		if subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) != 1 {
			http.Error(w, "Refused: the form's security token is missing or stale; reload the page and try again.", http.StatusForbidden)
			return
		}
		h(w, r, s)
	}
}

// signInRequired answers a request without a session.
func (c *Console) signInRequired(w http.ResponseWriter, r *http.Request, msg string) {
	if r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == "/console/") {
		c.write(w, http.StatusOK, page{Title: "Sign in", Error: msg}, signinPage)
		return
	}
	http.Error(w, "Sign in first: open the console at /.", http.StatusUnauthorized)
}

// CheckLoopback refuses a listen address that is not on loopback: the
// console holds its users' keys and is for this machine only.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad listen address %q: want HOST:PORT, e.g. 127.0.0.1:8001", addr)
	}
	if !loopbackHost(host) {
		return fmt.Errorf("the console listens only on loopback (127.0.0.1, ::1 or localhost), not %s", host)
	}
	return nil
}
