package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Connection limits and the body read timeout (docs/protocol.md,
// "Limits"). A client that opens connections and sends its bodies a byte
// a minute would otherwise hold them, and the server's file descriptors,
// forever. So every request's body must arrive within BodyTimeout; each
// client (remote IP) may hold MaxConnsPerClient connections and all
// clients together MaxConns. A connection over a limit is still read:
// its health check is answered (so a monitor sees the server up) and any
// other request gets 429 with Retry-After, then the connection closes
// (429, not 503: the SDK backs off after a 429, also on a poll, where it
// would poll again at once after a 5xx).
// Past MaxConns + connOverflow connections are closed unread.

const (
	defaultBodyTimeout       = 2 * time.Minute
	defaultMaxConnsPerClient = 256
	maxConnsCap              = 1024
	connOverflow             = 32
	// maxHeaderBytes bounds a request's header block (the SDK's are under
	// 2 KiB): a larger one, e.g. a 200 KB key, is answered 431 by net/http
	// before any handler runs.
	maxHeaderBytes = 64 << 10
)

// defaultMaxConns is half the file descriptors the process may open (the
// rest are for the database and checkpoint files), at most maxConnsCap.
func defaultMaxConns() int {
	n := openFileLimit() / 2
	if n <= 0 || n > maxConnsCap {
		return maxConnsCap
	}
	return max(n, 16)
}

type connLimiter struct {
	max, perClient int
	mu             sync.Mutex
	total          int
	byIP           map[string]int
}

// limitListener counts connections per client and in all.
type limitListener struct {
	net.Listener
	l *connLimiter
}

func (s *Server) limitListener(ln net.Listener) net.Listener {
	return &limitListener{ln, &connLimiter{max: s.opts.MaxConns, perClient: s.opts.MaxConnsPerClient, byIP: map[string]int{}}}
}

func (ln *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := ln.l.admit(c); lc != nil {
			return lc, nil
		}
		c.Close()
	}
}

// admit wraps c, marking it over a limit, or returns nil when even the
// overflow is full.
func (l *connLimiter) admit(c net.Conn) *limitedConn {
	ip := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.max+connOverflow {
		return nil
	}
	over := l.total >= l.max || l.byIP[ip] >= l.perClient
	l.total++
	l.byIP[ip]++
	return &limitedConn{Conn: c, over: over, release: func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.total--
		if l.byIP[ip]--; l.byIP[ip] <= 0 {
			delete(l.byIP, ip)
		}
	}}
}

// limitedConn is an accepted connection; over says it passed a limit.
type limitedConn struct {
	net.Conn
	over     bool
	release  func()
	once     sync.Once
	smuggled atomic.Bool // a request head had Content-Length and Transfer-Encoding (headscan.go)
	scan     headScanner
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

type connKey struct{}

// connContext makes the connection visible to guard.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// guard applies the connection-level rules before the API sees a request.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lc, _ := r.Context().Value(connKey{}).(*limitedConn)
		switch {
		case lc != nil && lc.smuggled.Load():
			w.Header().Set("Connection", "close")
			writeError(w, errorf(http.StatusBadRequest, "Content-Length and Transfer-Encoding together; send one"))
			return
		case lc != nil && lc.over && r.URL.Path != "/api/v1/healthz":
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			writeError(w, errorf(http.StatusTooManyRequests, "Too many connections (at most %d per client, %d in all); retry shortly", s.opts.MaxConnsPerClient, s.opts.MaxConns))
			return
		}
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the body's read deadline once the whole body is
// read, so that a long answer (a download, a held poll) is not cut short;
// after a timeout it stays, so the connection closes.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// Read feeds what the server reads to the head scanner.
func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.scan.feed(p[:n]) {
		c.smuggled.Store(true)
	}
	return n, err
}
