package tinkerapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The SDK parses datetimes with pydantic, which also accepts timestamps
// without a zone (taken as UTC), a space instead of "T", and unix seconds.
// encoding/json's time.Time accepts only RFC 3339, so the response types
// that carry times decode them through flexTime.

type flexTime struct{ t *time.Time }

var naiveLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02",
}

func (f flexTime) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] != '"' {
		secs, err := strconv.ParseFloat(string(b), 64)
		if err != nil || math.IsInf(secs, 0) || math.IsNaN(secs) {
			return fmt.Errorf("invalid datetime %s", b)
		}
		whole, frac := math.Modf(secs)
		*f.t = time.Unix(int64(whole), int64(frac*1e9)).UTC()
		return nil
	}
	var s string
	if n := len(b); n >= 2 && b[n-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		s = string(b[1 : n-1]) // the common case: no escapes to decode
	} else if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return parseDatetime(s, f.t)
}

// parseDatetime reads the text of a datetime string into *t.
func parseDatetime(s string, t *time.Time) error {
	if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
		*t = v
		return nil
	}
	for _, layout := range naiveLayouts {
		if v, err := time.Parse(layout, s); err == nil {
			*t = v
			return nil
		}
	}
	return fmt.Errorf("invalid datetime %q", s)
}

// flexTimePtr decodes an optional datetime; null leaves the pointer nil.
type flexTimePtr struct{ t **time.Time }

func (f flexTimePtr) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*f.t = nil
		return nil
	}
	var t time.Time
	if err := (flexTime{&t}).UnmarshalJSON(b); err != nil {
		return err
	}
	*f.t = &t
	return nil
}

// UnmarshalJSON accepts the datetime forms pydantic accepts.
func (c *Checkpoint) UnmarshalJSON(b []byte) error {
	type plain Checkpoint
	aux := struct {
		*plain
		Time      flexTime    `json:"time"`
		ExpiresAt flexTimePtr `json:"expires_at"`
	}{plain: (*plain)(c), Time: flexTime{&c.Time}, ExpiresAt: flexTimePtr{&c.ExpiresAt}}
	return json.Unmarshal(b, &aux)
}

// UnmarshalJSON accepts the datetime forms pydantic accepts.
func (r *TrainingRun) UnmarshalJSON(b []byte) error {
	type plain TrainingRun
	aux := struct {
		*plain
		LastRequestTime flexTime `json:"last_request_time"`
	}{plain: (*plain)(r), LastRequestTime: flexTime{&r.LastRequestTime}}
	return json.Unmarshal(b, &aux)
}

// UnmarshalJSON accepts the datetime forms pydantic accepts.
func (a *CheckpointArchiveURL) UnmarshalJSON(b []byte) error {
	type plain CheckpointArchiveURL
	aux := struct {
		*plain
		Expires flexTime `json:"expires"`
	}{plain: (*plain)(a), Expires: flexTime{&a.Expires}}
	return json.Unmarshal(b, &aux)
}
