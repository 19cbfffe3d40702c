package hfhub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// User is the part of GET /api/whoami-v2 that a push needs.
type User struct {
	Name string `json:"name"` // the namespace repos without one are created in
	Type string `json:"type"` // "user" or "org"
}

func (h *Hub) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return http.DefaultClient
}

// newRequest builds a request to the Hub itself, which gets the token.
func (h *Hub) newRequest(ctx context.Context, method, u string, body []byte, contentType string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body == nil {
		req.Body, req.GetBody, req.ContentLength = nil, nil, 0
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	req.Header.Set("User-Agent", "tinker-shell (hfhub)")
	return req, nil
}

// callJSON sends in (if not nil) as JSON and decodes a 2xx answer into out
// (if not nil). ok lists other statuses to accept silently (409 "exists").
func (h *Hub) callJSON(ctx context.Context, op, method, u string, in, out any, ok ...int) (status int, err error) {
	var body []byte
	if in != nil {
		if body, err = json.Marshal(in); err != nil {
			return 0, fmt.Errorf("hub: %s: %w", op, err)
		}
	}
	req, err := h.newRequest(ctx, method, u, body, "application/json")
	if err != nil {
		return 0, fmt.Errorf("hub: %s: %w", op, err)
	}
	return h.doJSON(op, req, out, ok...)
}

func (h *Hub) doJSON(op string, req *http.Request, out any, ok ...int) (int, error) {
	resp, err := h.client().Do(req)
	if err != nil {
		return 0, fmt.Errorf("hub: %s: %w", op, err)
	}
	defer resp.Body.Close()
	for _, s := range ok {
		if resp.StatusCode == s {
			return s, nil
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, h.apiError(op, resp)
	}
	if out != nil {
		if err := decodeAnswer(resp.Body, out); err != nil {
			return resp.StatusCode, fmt.Errorf("hub: %s: %w", op, err)
		}
	}
	return resp.StatusCode, nil
}

// maxAnswer bounds a Hub JSON answer (whoami, repo creation, preupload and
// LFS batch answers are kilobytes): a broken or hostile endpoint cannot
// make the client buffer an endless body.
const maxAnswer = 16 << 20

// decodeAnswer decodes one JSON answer of at most maxAnswer bytes.
func decodeAnswer(body io.Reader, out any) error {
	b, err := io.ReadAll(io.LimitReader(body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if len(b) > maxAnswer {
		return fmt.Errorf("answer larger than %d MiB: check HF_ENDPOINT names the Hugging Face Hub", maxAnswer>>20)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("malformed answer: %w", err)
	}
	return nil
}

// Whoami returns the account the token belongs to: ErrNotLoggedIn without
// a token, an *APIError (status 401) for a token the Hub refuses.
func (h *Hub) Whoami(ctx context.Context) (*User, error) {
	if h.Token == "" {
		return nil, ErrNotLoggedIn
	}
	var u User
	if _, err := h.callJSON(ctx, "whoami", http.MethodGet, h.Endpoint+"/api/whoami-v2", nil, &u); err != nil {
		return nil, h.scrub(err)
	}
	if u.Name == "" {
		return nil, fmt.Errorf("hub: whoami: the answer names no account")
	}
	return &u, nil
}

// CreateRepo creates the model repo namespace/name, or leaves an existing
// one as it is (its visibility unchanged), and returns its URL.
func (h *Hub) CreateRepo(ctx context.Context, repoID string, private bool) (string, error) {
	ns, name, ok := strings.Cut(repoID, "/")
	if !ok || !validRepoID(repoID) {
		return "", fmt.Errorf("hub: invalid repo id %q (want namespace/name)", repoID)
	}
	payload := map[string]any{"name": name, "organization": ns, "private": private, "type": "model"}
	var out struct {
		URL string `json:"url"`
	}
	_, err := h.callJSON(ctx, "create repo "+repoID, http.MethodPost, h.Endpoint+"/api/repos/create", payload, &out, http.StatusConflict)
	if err != nil {
		return "", h.scrub(err)
	}
	if out.URL == "" {
		out.URL = h.Endpoint + "/" + repoID
	}
	return out.URL, nil
}

// createBranch makes branch from the default branch unless it exists:
// commits to a branch that does not exist are refused.
func (h *Hub) createBranch(ctx context.Context, repoID, branch string) error {
	u := fmt.Sprintf("%s/api/models/%s/branch/%s", h.Endpoint, repoID, url.PathEscape(branch))
	_, err := h.callJSON(ctx, "create branch "+branch+" in "+repoID, http.MethodPost, u, map[string]any{}, nil, http.StatusConflict)
	return err
}

// readFile fetches one file of a repo at a revision; found is false when
// the repo, the revision or the file does not exist.
func (h *Hub) readFile(ctx context.Context, repoID, revision, name string) (data []byte, found bool, err error) {
	u := fmt.Sprintf("%s/%s/resolve/%s/%s", h.Endpoint, repoID, url.PathEscape(revision), name)
	resp, _, err := h.get(ctx, u)
	if err != nil {
		return nil, false, fmt.Errorf("hub: read %s from %s: %w", name, repoID, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, nil
	case resp.StatusCode != http.StatusOK:
		return nil, false, h.apiError("read "+name+" from "+repoID, resp)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, false, fmt.Errorf("hub: read %s from %s: %w", name, repoID, err)
	}
	return data, true, nil
}
