package tinkerapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

var queryEscape = url.QueryEscape

// seg escapes one path segment. Colons stay raw, as the SDK sends them.
func seg(s string) string { return url.PathEscape(s) }

func runPath(runID string) (string, error) {
	if runID == "" {
		return "", errors.New("training run id is empty")
	}
	return "/api/v1/training_runs/" + seg(runID), nil
}

// checkpointsPath is …/training_runs/<run>/checkpoints. An empty run id or
// checkpoint name (from a path like tinker:///weights/x) is sent as the
// official SDK sends it, and the service's answer (a 404) is what the user
// sees, as with the official CLI.
func checkpointsPath(runID string) string {
	return "/api/v1/training_runs/" + seg(runID) + "/checkpoints"
}

// checkpointPath builds …/training_runs/<run>/checkpoints/<kind>/<name>;
// the checkpoint id keeps its slash (docs/protocol.md, "Runs and checkpoints").
func checkpointPath(runID, checkpointID string) (string, error) {
	kind, name, ok := strings.Cut(checkpointID, "/")
	if !ok || kind == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("invalid checkpoint id %q: want weights/<name> or sampler_weights/<name>", checkpointID)
	}
	return checkpointsPath(runID) + "/" + seg(kind) + "/" + seg(name), nil
}

func scope(s string) string {
	if s == "" {
		return "owned"
	}
	return s
}

// ListTrainingRuns fetches one page of the caller's training runs.
// accessScope is "owned" (default when empty) or "accessible".
func (c *Client) ListTrainingRuns(ctx context.Context, limit, offset int, accessScope string) (*TrainingRunsResponse, error) {
	const p = "/api/v1/training_runs"
	resp, err := c.DoRaw(ctx, http.MethodGet, p, nil,
		WithQuery("limit", strconv.Itoa(limit), "offset", strconv.Itoa(offset), "access_scope", scope(accessScope)))
	if err != nil {
		return nil, err
	}
	out, err := decodeTrainingRuns(resp.Body)
	return out, c.schemaErr(err, p)
}

// GetTrainingRun fetches one training run.
func (c *Client) GetTrainingRun(ctx context.Context, runID, accessScope string) (*TrainingRun, error) {
	p, err := runPath(runID)
	if err != nil {
		return nil, err
	}
	resp, err := c.DoRaw(ctx, http.MethodGet, p, nil, WithQuery("access_scope", scope(accessScope)))
	if err != nil {
		return nil, err
	}
	out, err := decodeTrainingRun(resp.Body)
	return out, c.schemaErr(err, p)
}

// ListRunCheckpoints fetches all checkpoints of a run (unpaginated).
func (c *Client) ListRunCheckpoints(ctx context.Context, runID string) (*CheckpointsListResponse, error) {
	p := checkpointsPath(runID)
	resp, err := c.DoRaw(ctx, http.MethodGet, p, nil)
	if err != nil {
		return nil, err
	}
	out, err := decodeCheckpoints(resp.Body, nil)
	return out, c.schemaErr(err, p)
}

// ListUserCheckpoints fetches one page of all the caller's checkpoints,
// newest first.
func (c *Client) ListUserCheckpoints(ctx context.Context, limit, offset int) (*CheckpointsListResponse, error) {
	return c.ListUserCheckpointsInto(ctx, limit, offset, nil)
}

// ListUserCheckpointsInto is ListUserCheckpoints with the page's entries
// appended to dst: its Checkpoints is append(dst, page...), so a page
// that fits dst's spare capacity is decoded in place, where a caller
// joining pages wants it, rather than into a slice of its own.
func (c *Client) ListUserCheckpointsInto(ctx context.Context, limit, offset int, dst []Checkpoint) (*CheckpointsListResponse, error) {
	const p = "/api/v1/checkpoints"
	resp, err := c.DoRaw(ctx, http.MethodGet, p, nil,
		WithQuery("limit", strconv.Itoa(limit), "offset", strconv.Itoa(offset)), withPooledBody())
	if err != nil {
		return nil, notOffered(err, "listing all checkpoints")
	}
	out, err := decodeCheckpoints(resp.Body, dst)
	if err != nil {
		return nil, c.schemaErr(err, p)
	}
	detachCheckpoints(out.Checkpoints[len(dst):])
	resp.recycle()
	return out, nil
}

// Checkpoint mutations treat 409 as final (docs/protocol.md, "Errors and retries"):
// it reports a state ("already public"), and retrying cannot change it.

// DeleteCheckpoint deletes a checkpoint permanently.
func (c *Client) DeleteCheckpoint(ctx context.Context, runID, checkpointID string) error {
	p, err := checkpointPath(runID, checkpointID)
	if err != nil {
		return err
	}
	return c.Do(ctx, http.MethodDelete, p, nil, nil, FinalStatus(http.StatusConflict))
}

// PublishCheckpoint makes a checkpoint public. A 409 (already public) is
// returned at once as an *APIError, not retried.
func (c *Client) PublishCheckpoint(ctx context.Context, runID, checkpointID string) error {
	p, err := checkpointPath(runID, checkpointID)
	if err != nil {
		return err
	}
	return c.Do(ctx, http.MethodPost, p+"/publish", nil, nil, FinalStatus(http.StatusConflict))
}

// UnpublishCheckpoint makes a checkpoint private; 409 means already private.
func (c *Client) UnpublishCheckpoint(ctx context.Context, runID, checkpointID string) error {
	p, err := checkpointPath(runID, checkpointID)
	if err != nil {
		return err
	}
	return c.Do(ctx, http.MethodDelete, p+"/publish", nil, nil, FinalStatus(http.StatusConflict))
}

// SetCheckpointTTL makes a checkpoint expire ttl seconds from now, or
// never when ttl is nil.
func (c *Client) SetCheckpointTTL(ctx context.Context, runID, checkpointID string, ttl *int64) error {
	p, err := checkpointPath(runID, checkpointID)
	if err != nil {
		return err
	}
	return c.Do(ctx, http.MethodPut, p+"/ttl", map[string]*int64{"ttl_seconds": ttl}, nil, FinalStatus(http.StatusConflict))
}

// ArchiveURL asks for a signed, unauthenticated download URL of a
// checkpoint archive. The server answers 302 (Location, Expires) or 200
// JSON; a 503 (the archive is being built) is retried like any 5xx, after
// its Retry-After or the usual backoff, as the SDK does. Fetch the URL
// with a plain HTTP client: it must not carry X-API-Key.
func (c *Client) ArchiveURL(ctx context.Context, runID, checkpointID string) (*CheckpointArchiveURL, error) {
	p, err := checkpointPath(runID, checkpointID)
	if err != nil {
		return nil, err
	}
	p += "/archive"
	resp, err := c.DoRaw(ctx, http.MethodGet, p, nil, AllowStatus(301, 302, 303, 307, 308))
	if err != nil {
		return nil, err
	}
	out, err := parseArchiveResponse(p, resp, time.Now())
	return out, c.schemaErr(err, p)
}

func parseArchiveResponse(path string, resp *Response, now time.Time) (*CheckpointArchiveURL, error) {
	if resp.Status/100 == 3 {
		loc := resp.Header.Get("Location")
		if loc == "" {
			return nil, &SchemaError{Path: path, Field: "Location", Reason: "redirect without a Location header"}
		}
		if base, err := url.Parse(resp.URL); err == nil {
			if ref, err := url.Parse(loc); err == nil {
				loc = base.ResolveReference(ref).String()
			}
		}
		exp, err := http.ParseTime(resp.Header.Get("Expires"))
		if err != nil {
			exp = now.Add(15 * time.Minute)
		}
		return &CheckpointArchiveURL{URL: loc, Expires: exp.UTC()}, nil
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !strings.HasSuffix(mt, "json") {
		return nil, &SchemaError{Path: path, Reason: fmt.Sprintf("archive answer has content type %q, want JSON", mt)}
	}
	if err := validateArchive(resp.Body); err != nil {
		return nil, err
	}
	var out CheckpointArchiveURL
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return nil, &SchemaError{Reason: err.Error()}
	}
	return &out, nil
}

// WeightsInfo returns minimal information about any checkpoint the caller
// can read, including public checkpoints of other accounts.
func (c *Client) WeightsInfo(ctx context.Context, tinkerPath string) (*WeightsInfo, error) {
	var out WeightsInfo
	err := c.Do(ctx, http.MethodPost, "/api/v1/weights_info", map[string]string{"tinker_path": tinkerPath}, &out,
		WithValidator(validateWeightsInfo))
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSessions fetches one page of session ids.
func (c *Client) ListSessions(ctx context.Context, limit, offset int, accessScope string) (*ListSessionsResponse, error) {
	var out ListSessionsResponse
	err := c.Do(ctx, http.MethodGet, "/api/v1/sessions", nil, &out,
		WithQuery("limit", strconv.Itoa(limit), "offset", strconv.Itoa(offset), "access_scope", scope(accessScope)),
		WithValidator(requireFields("sessions")))
	if err != nil {
		return nil, notOffered(err, "session listing")
	}
	return &out, nil
}

// GetSession lists the training runs and samplers of a session.
func (c *Client) GetSession(ctx context.Context, sessionID, accessScope string) (*GetSessionResponse, error) {
	if sessionID == "" {
		return nil, errors.New("session id is empty")
	}
	var out GetSessionResponse
	err := c.Do(ctx, http.MethodGet, "/api/v1/sessions/"+seg(sessionID), nil, &out,
		WithQuery("access_scope", scope(accessScope)),
		WithValidator(requireFields("training_run_ids", "sampler_ids")))
	if err != nil {
		return nil, notOffered(err, "session details")
	}
	return &out, nil
}

// GetSampler returns a sampler's base model and checkpoint.
func (c *Client) GetSampler(ctx context.Context, samplerID string) (*GetSamplerResponse, error) {
	if samplerID == "" {
		return nil, errors.New("sampler id is empty")
	}
	var out GetSamplerResponse
	err := c.Do(ctx, http.MethodGet, "/api/v1/samplers/"+seg(samplerID), nil, &out,
		WithValidator(requireFields("sampler_id", "base_model")))
	if err != nil {
		return nil, notOffered(err, "sampler details")
	}
	return &out, nil
}

// TraceExport starts or polls a session's trace export (one poll; the
// caller repeats every few seconds until Status is "ready" or "failed").
func (c *Client) TraceExport(ctx context.Context, sessionID string) (*TraceExport, error) {
	if sessionID == "" {
		return nil, errors.New("session id is empty")
	}
	var out TraceExport
	err := c.Do(ctx, http.MethodGet, "/api/v1/sessions/"+seg(sessionID)+"/trace_export", nil, &out,
		WithValidator(requireFields("status")))
	if err != nil {
		return nil, notOffered(err, "session export")
	}
	return &out, nil
}

// BillingUsage fetches hourly usage in [start, end). Times are sent in
// RFC 3339 with their own offset ("Z" for UTC); the server wants
// hour-aligned bounds at most 14 days apart.
func (c *Client) BillingUsage(ctx context.Context, start, end time.Time) (*BillingUsageResponse, error) {
	return c.BillingUsageRaw(ctx, start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
}

// BillingUsageRaw is BillingUsage with the query values given verbatim,
// for callers that must send a zone-less time as the official CLI does.
func (c *Client) BillingUsageRaw(ctx context.Context, startingOn, endingBefore string) (*BillingUsageResponse, error) {
	var out BillingUsageResponse
	err := c.Do(ctx, http.MethodGet, "/api/v1/billing/usage/events", nil, &out,
		WithQuery("starting_on", startingOn, "ending_before", endingBefore),
		WithValidator(requireFields("data")))
	if err != nil {
		return nil, notOffered(err, "billing")
	}
	return &out, nil
}

// GetServerCapabilities lists the base models the service supports.
func (c *Client) GetServerCapabilities(ctx context.Context) (*ServerCapabilities, error) {
	var out ServerCapabilities
	err := c.Do(ctx, http.MethodGet, "/api/v1/get_server_capabilities", nil, &out,
		WithValidator(requireFields("supported_models")))
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Healthz checks that the service answers {"status": "ok"}.
func (c *Client) Healthz(ctx context.Context) error {
	var out struct {
		Status string `json:"status"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/healthz", nil, &out, WithValidator(requireFields("status"))); err != nil {
		return err
	}
	if out.Status != "ok" {
		return fmt.Errorf("healthz: service status %q, want \"ok\"", out.Status)
	}
	return nil
}
