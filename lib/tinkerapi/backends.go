package tinkerapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Other servers implement the same API with a partial surface (SkyRL tx:
// no sessions listing, billing or trace export; futures numbered with
// integers; model_owner "default"). The client keeps working with them:
// optional endpoints they lack answer with one line that names the
// feature, and ids come back to the server in the form it sent them.
// docs/compat.md, "Other backends", lists what is tolerated.

// ErrNotOffered is matched (errors.Is) by the error of a call to an
// optional endpoint the backend does not have.
var ErrNotOffered = errors.New("not offered by this backend")

// notOffered returns the one-line error for feature when err is a
// backend's answer that it has no such endpoint, else err unchanged.
func notOffered(err error, feature string) error {
	var ae *APIError
	if !errors.As(err, &ae) || !missingEndpoint(ae) {
		return err
	}
	return &notOfferedError{UserError{Msg: "this backend does not offer " + feature}, ae}
}

// notOfferedError is shown as its one line; the answer stays reachable
// for callers that log it.
type notOfferedError struct {
	UserError
	Answer *APIError
}

func (e *notOfferedError) Is(target error) bool { return target == ErrNotOffered }

// Unwrap lets CLIError find the UserError and show its one line.
func (e *notOfferedError) Unwrap() error { return &e.UserError }

// missingEndpoint tells a server without the route from one that has it and
// refuses the request: 405, or a 404 whose detail names nothing (FastAPI's
// and this repository's server answer unknown routes with "Not Found"; a
// missing object gets a sentence naming it).
func missingEndpoint(ae *APIError) bool {
	switch ae.Status {
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	case http.StatusNotFound:
		d := strings.TrimSpace(ae.Detail())
		return d == "" || strings.EqualFold(d, "Not Found")
	}
	return false
}

// UnmarshalJSON reads a future's submission answer; request_id may be a
// string (the Tinker service) or a number (other backends).
func (h *futureHandle) UnmarshalJSON(b []byte) error {
	var w struct {
		RequestID json.RawMessage `json:"request_id"`
		ModelID   string          `json:"model_id"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	h.ModelID, h.RequestID, h.numeric = w.ModelID, "", false
	switch id := strings.TrimSpace(string(w.RequestID)); {
	case id == "" || id == "null":
	case id[0] == '"':
		return json.Unmarshal(w.RequestID, &h.RequestID)
	default:
		var n json.Number
		if err := json.Unmarshal(w.RequestID, &n); err != nil {
			return fmt.Errorf("request_id: want a string or a number, got %s", id)
		}
		h.RequestID, h.numeric = n.String(), true
	}
	return nil
}

// wireRequestID is the request_id of retrieve_future: a number when the
// server sent one.
func wireRequestID(id string, numeric bool) any {
	if numeric {
		return json.Number(id)
	}
	return id
}

// MissingEndpoint reports whether an answer with this status and body says
// the server has no such endpoint (rather than refusing the request).
func MissingEndpoint(status int, body []byte) bool {
	return missingEndpoint(&APIError{Status: status, Body: body})
}

// CredentialSource says where the client's credential comes from, never
// the credential itself.
func (c *Client) CredentialSource() string {
	switch {
	case isJWT(c.cfg.APIKey):
		return "a JWT in TINKER_API_KEY"
	case c.cfg.APIKey != "":
		return "an API key in TINKER_API_KEY"
	case c.cfg.CredentialCmd != "":
		return "the output of the credential command (TINKER_CREDENTIAL_CMD or the profile's credential_command)"
	}
	return "none"
}
