package tinkerapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/tinkershell/tinker/lib/engine"
	"github.com/tinkershell/tinker/lib/server"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// The wire harness: a recording proxy of our own on loopback in front of
// the real local server, driving tinker's client, with faults injected at
// the proxy. It pins what tinker sends (method, path, query, body field
// names and JSON types, compression, headers) and how it waits and
// retries (through the client's Config.Sleep, so no wall clock is
// asserted) to what the official SDK does (docs/protocol.md,
// docs/compat.md "Wire").

// event is one thing the harness saw, in order: a request reaching the
// proxy, or a wait of the client.
type event struct {
	req   *seen
	sleep time.Duration
}

// seen is one request at the proxy.
type seen struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte // as sent
	Plain               []byte // decompressed when Content-Encoding: zstd
	Fault               string // what the proxy did instead of forwarding, or ""
}

// fault is what the proxy does with a request instead of (or after)
// forwarding it: "" forwards, "drop" closes the connection unanswered,
// "lost" forwards and then closes without the answer, "status" answers
// status with header itself, "try_again" answers a poll with try_again.
type fault struct {
	kind   string
	status int
	header map[string]string
	body   string
}

type wireProxy struct {
	t        *testing.T
	upstream string
	mu       sync.Mutex
	events   []event
	inject   func(s *seen) fault // nil: forward everything
	tr       *http.Transport
}

func newWireProxy(t *testing.T, upstream string) (*wireProxy, *httptest.Server) {
	p := &wireProxy{t: t, upstream: upstream, tr: &http.Transport{DisableCompression: true}}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() { srv.Close(); p.tr.CloseIdleConnections() })
	return p, srv
}

func (p *wireProxy) setFaults(fn func(s *seen) fault) {
	p.mu.Lock()
	p.inject = fn
	p.mu.Unlock()
}

func (p *wireProxy) sleep(ctx context.Context, d time.Duration) error {
	p.mu.Lock()
	p.events = append(p.events, event{sleep: d})
	p.mu.Unlock()
	return ctx.Err()
}

// take returns the events so far and forgets them.
func (p *wireProxy) take() []event {
	p.mu.Lock()
	defer p.mu.Unlock()
	ev := p.events
	p.events = nil
	return ev
}

func (p *wireProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s := &seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Plain: body}
	if strings.EqualFold(r.Header.Get("Content-Encoding"), "zstd") {
		d, _ := zstd.NewReader(nil)
		s.Plain, _ = d.DecodeAll(body, nil)
		d.Close()
	}
	p.mu.Lock()
	f := fault{}
	if p.inject != nil && s.Path != "/api/v1/session_heartbeat" {
		f = p.inject(s)
	}
	s.Fault = f.kind
	p.events = append(p.events, event{req: s})
	p.mu.Unlock()
	switch f.kind {
	case "drop":
		hangUp(w)
		return
	case "status":
		for k, v := range f.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		io.WriteString(w, f.body)
		return
	case "try_again":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"try_again","request_id":"x","queue_state":"active"}`)
		return
	}
	resp, err := p.forward(r, body)
	if err != nil {
		p.t.Errorf("proxy: %v", err)
		hangUp(w)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if f.kind == "lost" {
		hangUp(w)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

func (p *wireProxy) forward(r *http.Request, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	return p.tr.RoundTrip(req)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

// wireEnv is the local server with the tiny engine behind a recording
// proxy, and a client of it whose waits the proxy records.
type wireEnv struct {
	proxy *wireProxy
	front *httptest.Server // the proxy's listener: closing it makes the server gone
	c     *tinkerapi.Client
	sess  *tinkerapi.Session
}

func newWireEnv(t *testing.T) *wireEnv {
	pool := &engine.Pool{}
	srv, err := server.Open(server.Options{DataDir: t.TempDir(), SweepInterval: -1, PollHold: 200 * time.Millisecond,
		Sampler: server.EngineSampler(pool), Engine: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	base, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, front := newWireProxy(t, base)
	c, err := tinkerapi.New(tinkerapi.Config{BaseURL: front.URL, APIKey: "tml-wire", UserAgent: tinkerapi.UserAgent("9.9.9"), Sleep: p.sleep})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.CreateSession(t.Context(), tinkerapi.SessionOptions{HeartbeatInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &wireEnv{proxy: p, front: front, c: c, sess: sess}
}
