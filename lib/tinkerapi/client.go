package tinkerapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// Client talks to one Tinker service. It is safe for concurrent use. The
// client/config handshake (and JWT exchange when the server asks for it)
// runs lazily before the first request.
type Client struct {
	cfg     Config
	base    string // base URL without trailing slash
	hc      *http.Client
	secrets redactor
	auth    authState
}

// New validates cfg and returns a client. It does no network I/O.
func New(cfg Config) (*Client, error) {
	cfg, base, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	} else {
		hc.Transport = defaultTransport()
	}
	// Never follow redirects: the archive endpoint answers 302 to a storage
	// host, and X-API-Key must not travel there.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c := &Client{cfg: cfg, base: base, hc: &hc}
	c.secrets.add(cfg.APIKey)
	c.secrets.add(cfg.CFAccessClientSecret)
	c.auth.init()
	return c, nil
}

func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.MaxIdleConnsPerHost = 64 // listings fetch pages concurrently
	return t
}

// BaseURL returns the service base URL in use (no trailing slash).
func (c *Client) BaseURL() string { return c.base }

// Response is a raw HTTP answer, body fully read.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	URL    string // the request URL, for resolving a relative Location
	pooled bool   // Body is bodyPool's, to be recycled once nothing points into it
}

// Option adjusts one call made with Do or DoRaw.
type Option func(*callOpts)

type callOpts struct {
	query       []string // key, value pairs, in order (the SDK's order is observable)
	header      http.Header
	contentType string
	timeout     time.Duration
	noRetry     bool
	allow       []int // non-2xx statuses returned as success
	final       []int // statuses never retried by the generic policy
	validate    func([]byte) error
	noAuth      bool // for the handshake: credential supplied explicitly
	credential  string
	maxBody     int64 // bound on the decoded answer; 0: maxResponseBytes
	pooled      bool  // read a 2xx body into a bodyPool buffer (withPooledBody)
}

// WithQuery appends query parameters, given as key, value pairs, in order.
func WithQuery(kv ...string) Option {
	return func(o *callOpts) { o.query = append(o.query, kv...) }
}

// WithHeader sets a request header.
func WithHeader(key, value string) Option {
	return func(o *callOpts) { o.header.Set(key, value) }
}

// WithContentType sets the Content-Type of a []byte body (default JSON).
func WithContentType(ct string) Option {
	return func(o *callOpts) { o.contentType = ct }
}

// WithTimeout overrides the per-attempt timeout.
func WithTimeout(d time.Duration) Option {
	return func(o *callOpts) { o.timeout = d }
}

// withMaxBody raises the bound on the decoded answer (future results).
func withMaxBody(n int64) Option {
	return func(o *callOpts) { o.maxBody = n }
}

// withPooledBody reads a 2xx answer into a reused buffer: for a caller
// that copies out what it keeps and then calls Response.recycle.
func withPooledBody() Option {
	return func(o *callOpts) { o.pooled = true }
}

// WithoutRetries makes a single attempt (heartbeats, future polls).
func WithoutRetries() Option {
	return func(o *callOpts) { o.noRetry = true }
}

// AllowStatus treats the given non-2xx statuses as success (DoRaw returns
// them instead of an *APIError).
func AllowStatus(codes ...int) Option {
	return func(o *callOpts) { o.allow = append(o.allow, codes...) }
}

// FinalStatus stops the generic retry policy from retrying these statuses,
// e.g. 409 on publish, which means "already public".
func FinalStatus(codes ...int) Option {
	return func(o *callOpts) { o.final = append(o.final, codes...) }
}

// WithValidator checks a 2xx body before it is decoded (required fields);
// its error should be a *SchemaError.
func WithValidator(fn func(body []byte) error) Option {
	return func(o *callOpts) { o.validate = fn }
}

// Do sends one API call with retries. path is the endpoint path such as
// "/api/v1/training_runs" (already escaped). body is nil, []byte (sent as
// is), or a value encoded as JSON. out is nil (body discarded), *[]byte,
// or a value the JSON body is decoded into.
func (c *Client) Do(ctx context.Context, method, path string, body, out any, opts ...Option) error {
	resp, err := c.DoRaw(ctx, method, path, body, opts...)
	if err != nil {
		return err
	}
	return c.decode(path, resp, out)
}

func (c *Client) decode(path string, resp *Response, out any) error {
	switch out := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*out = resp.Body
		return nil
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return c.schemaErr(&SchemaError{Reason: err.Error()}, path)
	}
	return nil
}

// DoRaw is Do without decoding: it returns the response of the first
// successful attempt (2xx or an allowed status) or the last error.
func (c *Client) DoRaw(ctx context.Context, method, path string, body any, opts ...Option) (*Response, error) {
	o := callOpts{header: http.Header{}}
	for _, opt := range opts {
		opt(&o)
	}
	payload, err := encodeBody(body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: encode request: %w", method, path, err)
	}
	resp, err := c.send(ctx, method, path, payload, &o)
	if err != nil {
		return nil, err
	}
	if o.validate != nil && resp.Status/100 == 2 {
		if err := o.validate(resp.Body); err != nil {
			return nil, c.schemaErr(err, path)
		}
	}
	return resp, nil
}

func encodeBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	}
	b, err := json.Marshal(body)
	var uv *json.UnsupportedValueError
	if errors.As(err, &uv) {
		// encoding/json's own text ("unsupported value: +Inf") names no
		// field; say what is wrong in the caller's terms.
		return nil, fmt.Errorf("the request holds %s, which JSON cannot carry; use finite numbers", uv.Str)
	}
	return b, err
}

// send runs the retry loop around single attempts.
func (c *Client) send(ctx context.Context, method, path string, payload []byte, o *callOpts) (*Response, error) {
	start := time.Now()
	idemKey := ""
	if method != http.MethodGet {
		idemKey = "stainless-python-retry-" + uuid.NewString()
	}
	forceClose := false
	for retries := 0; ; retries++ {
		cred := o.credential
		if !o.noAuth {
			var err error
			if cred, err = c.credential(ctx); err != nil {
				return nil, err
			}
		}
		req, err := c.newRequest(method, path, payload, o, cred, idemKey, retries)
		if err != nil {
			return nil, err
		}
		req.Close = forceClose
		resp, err := c.attempt(ctx, req, path, o)
		if err == nil && (resp.Status/100 == 2 || containsInt(o.allow, resp.Status)) {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, ctx.Err())
		}
		forceClose = false
		if err == nil {
			if resp.Status == http.StatusBadRequest && len(bytes.TrimSpace(resp.Body)) == 0 {
				// A bodyless 400 comes from a proxy, not the service: the SDK
				// drops the connection and retries it as a connection error.
				err = &TransportError{Method: method, Path: path, Err: errors.New("empty 400 response from a proxy")}
				forceClose = true
			} else {
				err = c.apiError(method, path, resp)
			}
		}
		delay, retry := c.retryDelay(resp, err, retries, o)
		if !retry || retries >= c.cfg.MaxRetries || time.Since(start)+delay > c.cfg.MaxRetryTime {
			return nil, err
		}
		c.logf("%s %s: %v; retrying in %s (retry %d)", method, path, err, delay.Round(time.Millisecond), retries+1)
		if err := c.cfg.Sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
}

func (c *Client) newRequest(method, path string, payload []byte, o *callOpts, cred, idemKey string, retries int) (*http.Request, error) {
	u := c.base + "/" + strings.TrimLeft(path, "/")
	if len(o.query) > 0 {
		u += "?" + encodeQuery(o.query)
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	h := req.Header
	h.Set("X-API-Key", cred)
	h.Set("User-Agent", c.cfg.UserAgent)
	h.Set("Accept", "application/json")
	// Asked for by hand, as the SDK does, so the answer is decoded here,
	// within its bound (readBody), not by the transport.
	h.Set("Accept-Encoding", "gzip, deflate")
	if method != http.MethodGet {
		ct := o.contentType
		if ct == "" {
			ct = "application/json"
		}
		h.Set("Content-Type", ct)
		// Under its lower-case name: net/http resends a request with
		// X-Idempotency-Key at once, with the same retry count, when a
		// kept-alive connection drops; the SDK waits and counts the retry,
		// and so does send. Header names are case-insensitive on the wire.
		h["x-idempotency-key"] = []string{idemKey}
	}
	h.Set("X-Stainless-Retry-Count", strconv.Itoa(retries))
	h.Set("X-Stainless-Read-Timeout", strconv.FormatFloat(c.timeout(o).Seconds(), 'f', -1, 64))
	for _, kv := range platformHeaders() {
		h.Set(kv[0], kv[1])
	}
	if c.cfg.CFAccessClientID != "" {
		h.Set("CF-Access-Client-Id", c.cfg.CFAccessClientID)
	}
	if c.cfg.CFAccessClientSecret != "" {
		h.Set("CF-Access-Client-Secret", c.cfg.CFAccessClientSecret)
	}
	for k, v := range o.header {
		h[k] = v
	}
	return req, nil
}

// encodeQuery keeps the caller's parameter order, unlike url.Values.
func encodeQuery(kv []string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(queryEscape(kv[i]))
		b.WriteByte('=')
		b.WriteString(queryEscape(kv[i+1]))
	}
	return b.String()
}

func (c *Client) timeout(o *callOpts) time.Duration {
	if o.timeout > 0 {
		return o.timeout
	}
	return c.cfg.RequestTimeout
}

// attempt performs one HTTP exchange under the per-attempt timeout,
// reading the whole body so that a stall or reset mid-body is a retryable
// transport error rather than a truncated success.
func (c *Client) attempt(ctx context.Context, req *http.Request, path string, o *callOpts) (*Response, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout(o))
	defer cancel()
	req = req.WithContext(actx)
	hr, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, actx, req.Method, path, err)
	}
	defer hr.Body.Close()
	limit := o.maxBody
	if limit <= 0 {
		limit = maxResponseBytes
	}
	pooled := o.pooled && hr.StatusCode/100 == 2
	body, err := readBody(hr, limit, pooled)
	if errors.Is(err, errTooLarge) {
		return nil, fmt.Errorf("%s %s: %w", req.Method, path, err)
	}
	if err != nil {
		return nil, c.transportError(ctx, actx, req.Method, path, err)
	}
	return &Response{Status: hr.StatusCode, Header: hr.Header, Body: body, URL: req.URL.String(), pooled: pooled}, nil
}

func (c *Client) transportError(ctx, actx context.Context, method, path string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	timeout := errors.Is(actx.Err(), context.DeadlineExceeded)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		timeout = true
	}
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	permanent := errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr)
	var dnsErr *net.DNSError
	unreachable := errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || (errors.As(err, &dnsErr) && dnsErr.IsNotFound)
	return &TransportError{Timeout: timeout, Permanent: permanent, Unreachable: unreachable, Method: method, Path: path,
		Err: errors.New(c.secrets.string(err.Error()))}
}

// apiError builds the error for a non-success answer; a server may echo
// the credential in its error body, so the body is scrubbed first.
func (c *Client) apiError(method, path string, resp *Response) *APIError {
	body := c.secrets.bytes(resp.Body)
	return &APIError{
		Status:  resp.Status,
		Body:    body,
		Message: sdkMessage(resp.Status, body),
		Method:  method,
		Path:    path,
		Header:  resp.Header,
	}
}

// maxRefusedRetries bounds the retries of an unreachable server (see
// TransportError.Unreachable); with the default delays they take about a
// second and a half.
const maxRefusedRetries = 2

// retryDelay applies the SDK's generic policy
// (docs/protocol.md, "Errors and retries").
func (c *Client) retryDelay(resp *Response, err error, retries int, o *callOpts) (time.Duration, bool) {
	if o.noRetry {
		return 0, false
	}
	var te *TransportError
	if errors.As(err, &te) {
		return c.backoff(retries), !te.Permanent && (!te.Unreachable || retries < maxRefusedRetries)
	}
	if resp == nil {
		return 0, false
	}
	if containsInt(o.final, resp.Status) || resp.Status == http.StatusInsufficientStorage {
		return 0, false // 507 even against X-Should-Retry: only freeing space helps
	}
	retry := false
	switch s := resp.Status; {
	case retryableStatus(s):
		retry = true
	case s == 402: // billing hold: the SDK pauses and retries
		retry = true
	}
	switch strings.ToLower(resp.Header.Get("X-Should-Retry")) {
	case "true":
		retry = true
	case "false":
		retry = false
	}
	if !retry {
		return 0, false
	}
	if d, ok := retryAfter(resp.Header, time.Now()); ok {
		return d, true
	}
	if resp.Status == 402 {
		return max(5*time.Second, c.backoff(retries)), true
	}
	return c.backoff(retries), true
}

// backoff is min(base·2^retries, max) times a jitter factor in (0.75, 1].
func (c *Client) backoff(retries int) time.Duration {
	d := c.cfg.RetryBaseDelay << min(retries, 20)
	if d > c.cfg.RetryMaxDelay || d <= 0 {
		d = c.cfg.RetryMaxDelay
	}
	return time.Duration(float64(d) * (1 - 0.25*rand.Float64()))
}

// retryAfter reads retry-after-ms or Retry-After (seconds or HTTP date);
// like the SDK it only trusts values in (0, 60 s].
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	var d time.Duration
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil {
		d = time.Duration(ms * float64(time.Millisecond))
	} else if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			d = time.Duration(s * float64(time.Second))
		} else if t, err := http.ParseTime(v); err == nil {
			d = t.Sub(now)
		}
	}
	if d > 0 && d <= 60*time.Second {
		return d, true
	}
	return 0, false
}

// sleep waits d or until ctx is done (Config.Sleep's default).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) logf(format string, args ...any) {
	c.cfg.Logf("%s", c.secrets.string(fmt.Sprintf(format, args...)))
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// CloseIdleConnections closes idle keep-alive connections.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }
