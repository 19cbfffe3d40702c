// Package doctor checks what a Tinker API backend offers and what stands
// in the way of using it: whether it answers and accepts the credential
// (whose source is named, never its value), its models and which of them
// can run now, which optional endpoints it has (other backends, such as
// SkyRL tx, implement part of the API), and the Hugging Face cache that
// tokenizers come from. Every probe is a read that changes nothing; a
// missing endpoint is a finding, not a failure.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/tinkershell/tinker/lib/hfhub"
	"github.com/tinkershell/tinker/lib/tinkerapi"
)

// Options describe the backend as the caller chose it.
type Options struct {
	Backend string     // e.g. the base URL, or "local, user …"
	Local   bool       // tinker --local: the credential is the local user's built-in key
	Hub     *hfhub.Hub // the Hugging Face settings; nil reads the environment
	Now     func() time.Time
	// Config describes the config file and profile in force, when the
	// caller knows them (the doctor command does).
	Config string
	// LocalData is where tinker --local keeps its data, reported when
	// there is no credential (the local server needs none).
	LocalData string
}

// Report is what Check found.
type Report struct {
	Backend    string
	BaseURL    string
	Credential string // where the credential comes from, or "none"
	Config     string // the config file and profile, if known
	Local      string // how to use the local server instead, without a credential
	Auth       string // "API key" or "JWT for <user>"
	Reachable  bool   // healthz answered
	Accepted   bool   // the credential was accepted
	Models     []tinkerapi.SupportedModel
	Endpoints  []Endpoint
	HFCache    HFCache
	Fixes      []string // what to do, one line each; empty when all is well
}

// OK reports whether the backend can be used: it answers and accepts the
// credential.
func (r *Report) OK() bool { return r.Reachable && r.Accepted }

// Endpoint is one probed endpoint and how it answered.
type Endpoint struct {
	Name   string // what it is for, e.g. "session export"
	Method string
	Path   string
	Status int    // HTTP status, 0 when there was no answer
	State  string // StateAnswers, StateNotOffered, StateRefused or StateFailed
	Err    string // why, for StateFailed
}

// Endpoint states.
const (
	StateAnswers    = "answers"
	StateNotOffered = "not offered"
	StateRefused    = "refused the credential"
	StateFailed     = "failed"
)

// HFCache is the Hugging Face cache tokenizers are read from and written to.
type HFCache struct {
	Dir      string
	Exists   bool
	Repos    int    // models--* entries
	Endpoint string // where missing files are downloaded from
	Offline  bool
}

// Check probes the backend c talks to.
func Check(ctx context.Context, c *tinkerapi.Client, o Options) *Report {
	r := &Report{Backend: o.Backend, BaseURL: c.BaseURL(), Credential: c.CredentialSource(), Auth: "API key", Config: o.Config}
	if o.Local {
		r.Credential = "the local user's built-in key (tinker --local)"
	}
	for _, p := range probes(o.now()) {
		e := probe(ctx, c, p)
		r.Endpoints = append(r.Endpoints, e)
		if e.Status == 0 {
			break // nothing answers: every other probe would say the same
		}
	}
	r.Reachable = r.Endpoints[0].Status != 0 && r.Endpoints[0].State != StateFailed
	r.Accepted = r.Reachable && !anyRefused(r.Endpoints)
	if r.Accepted {
		r.auth(ctx, c)
		if caps, err := c.GetServerCapabilities(ctx); err == nil {
			r.Models = caps.SupportedModels
		}
	}
	r.HFCache = hfCache(o.Hub)
	r.Fixes = fixes(r)
	return r
}

// NoCredential is the report for a service with no credential to try:
// nothing is probed (every request would be refused), and the one fix
// says how to set one or to use the local server instead.
func NoCredential(baseURL string, o Options) *Report {
	if baseURL == "" {
		baseURL = tinkerapi.DefaultBaseURL
	}
	r := &Report{Backend: o.Backend, BaseURL: baseURL, Credential: "none", Auth: "none", Config: o.Config, HFCache: hfCache(o.Hub)}
	if o.LocalData != "" {
		state := "absent: nothing run locally yet"
		if _, err := os.Stat(o.LocalData); err == nil {
			state = "present"
		}
		r.Local = fmt.Sprintf("tinker --local runs it in-process, no account needed; its data: %s (%s)", o.LocalData, state)
	}
	r.Fixes = []string{"no credential: set TINKER_API_KEY to your Tinker API key, or give a profile a credential_command (`tinker config --help`)",
		"or use the local server, no account needed: `tinker --local doctor`"}
	return r
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// auth names the user when the backend uses JWTs.
func (r *Report) auth(ctx context.Context, c *tinkerapi.Client) {
	cfg, err := c.ServerConfig(ctx)
	if err != nil || !cfg.PJWTAuthEnabled {
		return
	}
	r.Auth = "JWT"
	if who, err := c.Whoami(ctx); err == nil {
		r.Auth = "JWT for " + who.Sub
	}
}

type probeSpec struct {
	name, method, path string
	query              []string
	body               any
}

// probes are the endpoints checked, healthz first. Each is a read; the
// ids in paths are placeholders a server answers "not found" for when it
// has the endpoint.
func probes(now time.Time) []probeSpec {
	hour := now.UTC().Truncate(time.Hour)
	return []probeSpec{
		{name: "health", method: http.MethodGet, path: "/api/v1/healthz"},
		{name: "capabilities", method: http.MethodGet, path: "/api/v1/get_server_capabilities"},
		{name: "client config", method: http.MethodPost, path: "/api/v1/client/config", body: map[string]string{"sdk_version": tinkerapi.SDKVersion}},
		{name: "training runs", method: http.MethodGet, path: "/api/v1/training_runs", query: []string{"limit", "1", "offset", "0"}},
		{name: "all checkpoints", method: http.MethodGet, path: "/api/v1/checkpoints", query: []string{"limit", "1", "offset", "0"}},
		{name: "sessions", method: http.MethodGet, path: "/api/v1/sessions", query: []string{"limit", "1", "offset", "0"}},
		{name: "session export", method: http.MethodGet, path: "/api/v1/sessions/doctor-probe/trace_export"},
		{name: "billing", method: http.MethodGet, path: "/api/v1/billing/usage/events",
			query: []string{"starting_on", hour.Add(-time.Hour).Format(time.RFC3339), "ending_before", hour.Format(time.RFC3339)}},
	}
}

// answerStatuses are returned as answers rather than errors: each says
// something about the endpoint.
var answerStatuses = []int{400, 401, 403, 404, 405, 409, 410, 422, 501}

func probe(ctx context.Context, c *tinkerapi.Client, p probeSpec) Endpoint {
	e := Endpoint{Name: p.name, Method: p.method, Path: p.path}
	opts := []tinkerapi.Option{tinkerapi.AllowStatus(answerStatuses...), tinkerapi.WithoutRetries(), tinkerapi.WithTimeout(10 * time.Second)}
	if len(p.query) > 0 {
		opts = append(opts, tinkerapi.WithQuery(p.query...))
	}
	resp, err := c.DoRaw(ctx, p.method, p.path, p.body, opts...)
	var ae *tinkerapi.APIError
	switch {
	case errors.As(err, &ae): // the handshake before the probe failed
		resp = &tinkerapi.Response{Status: ae.Status, Body: ae.Body}
		e.Err = ae.Error()
	case err != nil:
		e.State, e.Err = StateFailed, err.Error()
		return e
	}
	e.Status = resp.Status
	switch {
	case resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden:
		e.State = StateRefused
	case tinkerapi.MissingEndpoint(resp.Status, resp.Body):
		e.State = StateNotOffered
	case resp.Status >= 500 || e.Err != "":
		e.State = StateFailed
		if e.Err == "" {
			e.Err = fmt.Sprintf("status %d", resp.Status)
		}
	default: // 2xx, or a refusal of the probe's placeholder arguments
		e.State = StateAnswers
	}
	return e
}

func anyRefused(es []Endpoint) bool {
	for _, e := range es {
		if e.State == StateRefused {
			return true
		}
	}
	return false
}

func hfCache(h *hfhub.Hub) HFCache {
	if h == nil {
		h = hfhub.FromEnv()
	}
	hc := HFCache{Dir: h.CacheDir, Endpoint: h.Endpoint, Offline: h.Offline}
	if _, err := os.Stat(h.CacheDir); err == nil {
		hc.Exists = true
		repos, _ := filepath.Glob(filepath.Join(h.CacheDir, "models--*"))
		hc.Repos = len(repos)
	}
	return hc
}

// fixes lists what to do about what Check found: the one thing that
// blocks everything, or else the findings that limit what works.
func fixes(r *Report) []string {
	if fix := blocking(r); fix != "" {
		return []string{fix}
	}
	var out []string
	if len(r.Models) == 0 {
		out = append(out, "the backend lists no base models (get_server_capabilities): nothing can be trained or sampled")
	}
	if fix := absentWeights(r.Models); fix != "" && Servable(r.Models) == 0 {
		out = append(out, fix)
	}
	var missing []string
	for _, e := range r.Endpoints {
		if e.State == StateNotOffered {
			missing = append(missing, e.Name)
		}
	}
	if len(missing) > 0 {
		out = append(out, "this backend does not offer "+joinAnd(missing)+": commands that need them will say so")
	}
	if !r.HFCache.Exists && r.HFCache.Offline {
		out = append(out, fmt.Sprintf("HF_HUB_OFFLINE is set but there is no Hugging Face cache at %s: unset it, or copy the tokenizers there", r.HFCache.Dir))
	}
	return out
}

// blocking is the fix for a backend that cannot be used at all, or "".
func blocking(r *Report) string {
	switch h := r.Endpoints[0]; {
	case h.Status == 0:
		return fmt.Sprintf("nothing answers at %s (%s): start `tinker serve`, or set TINKER_BASE_URL to the server's address", r.BaseURL, h.Err)
	case !r.Reachable:
		return fmt.Sprintf("%s answered healthz with %s: it is not a Tinker API server, or it is failing", r.BaseURL, h.Err)
	case !r.Accepted:
		return fmt.Sprintf("the server refused the credential from %s: set TINKER_API_KEY to a key it accepts", r.Credential)
	}
	return ""
}

// Servable counts the listed models that can run now (a backend that
// does not say has all of them).
func Servable(models []tinkerapi.SupportedModel) int {
	n := 0
	for _, m := range models {
		if m.Servable == nil || *m.Servable {
			n++
		}
	}
	return n
}

// absentWeights says how many listed models cannot be created for want of
// weights, with the way to provide one's, or "". It is a fix only when no
// model can run; otherwise the models row names those that can.
func absentWeights(models []tinkerapi.SupportedModel) string {
	var absent []tinkerapi.SupportedModel
	for _, m := range models {
		if m.Servable != nil && !*m.Servable {
			absent = append(absent, m)
		}
	}
	if len(absent) == 0 {
		return ""
	}
	return fmt.Sprintf("%d listed models have no weights here, so creating one fails until they do; for %s: %s",
		len(absent), absent[0].ModelName, absent[0].Unavailable)
}

func joinAnd(s []string) string {
	switch len(s) {
	case 1:
		return s[0]
	case 2:
		return s[0] + " or " + s[1]
	}
	out := ""
	for i, x := range s {
		switch {
		case i == len(s)-1:
			out += ", or " + x
		case i > 0:
			out += ", " + x
		default:
			out = x
		}
	}
	return out
}
