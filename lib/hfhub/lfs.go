package hfhub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// The Git LFS batch API (https://github.com/git-lfs/git-lfs/blob/main/docs/api/batch.md)
// as the Hub serves it at {endpoint}/{repo}.git/info/lfs/objects/batch.

const lfsMediaType = "application/vnd.git-lfs+json"

type lfsObject struct {
	OID  string `json:"oid"` // sha256 of the content, hex
	Size int64  `json:"size"`
}

type lfsAction struct {
	Href   string         `json:"href"`
	Header map[string]any `json:"header"`
}

type lfsBatchObject struct {
	lfsObject
	Actions struct {
		Upload *lfsAction `json:"upload"`
		Verify *lfsAction `json:"verify"`
	} `json:"actions"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// lfsBatch asks where to upload objects. Only the basic transfer (one PUT
// per object) is offered; objects the Hub already stores come back
// without an upload action.
func (h *Hub) lfsBatch(ctx context.Context, repoID, revision string, objs []lfsObject) ([]lfsBatchObject, error) {
	payload := map[string]any{
		"operation": "upload",
		"transfers": []string{"basic"},
		"objects":   objs,
		"hash_algo": "sha256",
		"ref":       map[string]string{"name": revision},
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	var out struct {
		Transfer string           `json:"transfer"`
		Objects  []lfsBatchObject `json:"objects"`
	}
	op := "LFS batch for " + repoID
	err = h.retry(ctx, func() error {
		req, err := h.newRequest(ctx, http.MethodPost, h.Endpoint+"/"+repoID+".git/info/lfs/objects/batch", body, lfsMediaType)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", lfsMediaType)
		_, err = h.doJSON(op, req, &out)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out.Transfer != "" && out.Transfer != "basic" {
		return nil, fmt.Errorf("hub: %s: the Hub chose the %q transfer; only basic is supported", op, out.Transfer)
	}
	for _, o := range out.Objects {
		if o.Error != nil {
			return nil, fmt.Errorf("hub: %s: object %s: %s (code %d)", op, o.OID, h.redact(o.Error.Message), o.Error.Code)
		}
		if a := o.Actions.Upload; a != nil {
			if a.Href == "" {
				return nil, fmt.Errorf("hub: %s: object %s: upload action without href", op, o.OID)
			}
			if _, multipart := a.Header["chunk_size"]; multipart {
				return nil, fmt.Errorf("hub: %s: object %s: the Hub asked for a multipart upload, which is not supported", op, o.OID)
			}
		}
	}
	return out.Objects, nil
}

// lfsUpload sends one object with a PUT to the storage URL the batch
// answer gave (no Hub token: that host is not the Hub), then calls the
// verify action if there is one. A failed PUT is sent again from the start.
func (h *Hub) lfsUpload(ctx context.Context, path string, obj lfsBatchObject, prog *progress) error {
	up := obj.Actions.Upload
	err := h.retry(ctx, func() error {
		f, err := os.Open(path)
		if err != nil {
			return errPermanent{err}
		}
		defer f.Close()
		body := &countingReader{r: io.NewSectionReader(f, 0, obj.Size), prog: prog}
		defer body.rewindUnlessDone(obj.Size)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, up.Href, body)
		if err != nil {
			return errPermanent{err}
		}
		req.ContentLength = obj.Size
		setActionHeaders(req, up)
		resp, err := h.uploadClient().Do(req)
		if err != nil {
			return fmt.Errorf("upload %s: %w", obj.OID, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return h.apiError("upload "+obj.OID, resp)
		}
		body.done = true
		return nil
	})
	if err != nil {
		return err
	}
	if v := obj.Actions.Verify; v != nil {
		in, _ := json.Marshal(obj.lfsObject)
		return h.retry(ctx, func() error {
			req, err := h.newRequest(ctx, http.MethodPost, v.Href, in, lfsMediaType)
			if err != nil {
				return errPermanent{err}
			}
			if !h.sameHost(v.Href) {
				req.Header.Del("Authorization")
			}
			req.Header.Set("Accept", lfsMediaType)
			setActionHeaders(req, v)
			_, err = h.doJSON("verify upload "+obj.OID, req, nil)
			return err
		})
	}
	return nil
}

func setActionHeaders(req *http.Request, a *lfsAction) {
	for k, v := range a.Header {
		if s, ok := v.(string); ok {
			req.Header.Set(k, s)
		}
	}
}

func (h *Hub) sameHost(u string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(h.Endpoint)
	return err1 == nil && err2 == nil && a.Scheme == b.Scheme && a.Host == b.Host
}

// uploadClient is the Hub's client without an overall deadline: sending a
// large file may take longer than any fixed limit; ctx still cancels it.
func (h *Hub) uploadClient() *http.Client {
	c := *h.client()
	c.Timeout = 0
	return &c
}

// errPermanent marks a failure that trying again cannot fix.
type errPermanent struct{ error }

func (e errPermanent) Unwrap() error { return e.error }

const retryAttempts = 5

// retry runs fn until it succeeds, up to retryAttempts times, while it
// fails with a network error or an answer saying to try later (408, 429,
// 5xx), waiting longer after each failure.
func (h *Hub) retry(ctx context.Context, fn func() error) error {
	wait := h.retryWait
	if wait == 0 {
		wait = time.Second
	}
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt == retryAttempts || !retryable(ctx, err) {
			var p errPermanent
			if errors.As(err, &p) {
				return p.error
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var p errPermanent
	if errors.As(err, &p) {
		return false
	}
	var api *APIError
	if errors.As(err, &api) {
		switch api.Status {
		case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	var uerr *url.Error
	return errors.As(err, &uerr) // the request never got an answer
}

// progress adds up bytes sent across files and reports the running total.
type progress struct {
	mu     sync.Mutex
	sent   int64
	total  int64
	report func(sent, total int64)
}

func (p *progress) add(n int64) {
	if p == nil || n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent += n
	if p.report != nil {
		p.report(p.sent, p.total)
	}
}

// countingReader reports what the HTTP client reads from a file. When the
// attempt ends, a failed one takes its bytes back off the total; the
// transport may still read after that, which no longer counts.
type countingReader struct {
	r     io.Reader
	prog  *progress
	mu    sync.Mutex
	n     int64
	ended bool
	done  bool // the server accepted the body
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ended {
		c.n += int64(n)
		c.prog.add(int64(n))
	}
	return n, err
}

func (c *countingReader) rewindUnlessDone(size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.done {
		c.prog.add(size - c.n) // the server has it all, whatever was counted
		return
	}
	c.prog.add(-c.n)
}
