package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/tinkershell/tinker/lib/store"
)

// parseBillingTime accepts RFC 3339 and, like the service, zone-less
// date-times (taken as UTC), which the official CLI sends for date-only input.
func parseBillingTime(name, v string) (time.Time, *apiError) {
	if v == "" {
		return time.Time{}, errorf(http.StatusUnprocessableEntity, "%s is required", name)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04:05.999999"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errorf(http.StatusBadRequest, "%s must be an RFC 3339 date-time, got %q", name, v)
}

type billingEvent struct {
	BucketStart ts      `json:"bucket_start"`
	BucketEnd   ts      `json:"bucket_end"`
	BaseModel   *string `json:"base_model"`
	UserID      *string `json:"user_id"`
	UserName    *string `json:"user_name"`
	SessionID   *string `json:"session_id"`
	ProjectID   *string `json:"project_id"`
}

func (s *Server) billingUsage(w http.ResponseWriter, r *http.Request, owner string, _ []string) *apiError {
	q := r.URL.Query()
	from, e := parseBillingTime("starting_on", q.Get("starting_on"))
	if e != nil {
		return e
	}
	to, e := parseBillingTime("ending_before", q.Get("ending_before"))
	if e != nil {
		return e
	}
	if !from.Equal(from.Truncate(time.Hour)) || !to.Equal(to.Truncate(time.Hour)) {
		return errorf(http.StatusBadRequest, "starting_on and ending_before must be aligned to the hour (e.g. 2026-07-13T05:00:00Z)")
	}
	if !to.After(from) {
		return errorf(http.StatusBadRequest, "ending_before must be after starting_on")
	}
	if to.Sub(from) > 14*24*time.Hour {
		return errorf(http.StatusBadRequest, "the window may span at most 14 days")
	}
	usage, err := s.st.Usage(owner, from, to)
	if err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	type key struct {
		bucket              time.Time
		session, base, kind string
		cached              bool
	}
	type agg struct {
		tokens, count int64
		gbh           float64
	}
	sums := map[key]*agg{}
	get := func(k key) *agg {
		a := sums[k]
		if a == nil {
			a = &agg{}
			sums[k] = a
		}
		return a
	}
	for _, u := range usage {
		get(key{u.At.Truncate(time.Hour), u.SessionID, u.BaseModel, u.Type, u.Cached}).tokens += u.TokenCount
	}
	runs := map[string]store.RunView{}
	now := s.now()
	for _, c := range s.st.OwnerCheckpoints(owner) {
		rv, ok := runs[c.RunID]
		if !ok {
			rv, _ = s.st.Run(c.RunID, now)
			runs[c.RunID] = rv
		}
		if !c.Time.Before(from) && c.Time.Before(to) {
			get(key{c.Time.Truncate(time.Hour), rv.SessionID, rv.BaseModel, "checkpoint", false}).count++
		}
		// Storage: bytes held during each hour of the window, up to now.
		end := now
		if c.ExpiresAt != nil && c.ExpiresAt.Before(end) {
			end = *c.ExpiresAt
		}
		for b := from; b.Before(to); b = b.Add(time.Hour) {
			lo, hi := maxTime(b, c.Time), minTime(b.Add(time.Hour), end)
			if hi.After(lo) {
				get(key{b, rv.SessionID, rv.BaseModel, "storage", false}).gbh += float64(c.SizeBytes) / 1e9 * hi.Sub(lo).Hours()
			}
		}
	}
	keys := make([]key, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	order := map[string]int{"training": 0, "sampling_prefill": 1, "sampling_sample": 2, "checkpoint": 3, "storage": 4}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if !a.bucket.Equal(b.bucket) {
			return a.bucket.Before(b.bucket)
		}
		if a.session != b.session {
			return a.session < b.session
		}
		if a.base != b.base {
			return a.base < b.base
		}
		if a.kind != b.kind {
			return order[a.kind] < order[b.kind]
		}
		return !a.cached && b.cached
	})
	var sb strings.Builder
	sb.WriteString(`{"data":[`)
	sessions := map[string]any{}
	ownerCopy := owner
	for i, k := range keys {
		a := sums[k]
		var info string
		switch k.kind {
		case "training", "sampling_sample":
			info = fmt.Sprintf(`{"type":%q,"token_count":%d}`, k.kind, a.tokens)
		case "sampling_prefill":
			info = fmt.Sprintf(`{"type":"sampling_prefill","cached":%t,"token_count":%d}`, k.cached, a.tokens)
		case "checkpoint":
			info = fmt.Sprintf(`{"type":"checkpoint","count":%d}`, a.count)
		case "storage":
			gb, _ := json.Marshal(a.gbh)
			info = `{"type":"storage","gigabyte_hours":` + string(gb) + `}`
		}
		ev := billingEvent{BucketStart: ts(k.bucket), BucketEnd: ts(k.bucket.Add(time.Hour)), UserID: &ownerCopy}
		if k.base != "" {
			base := k.base
			ev.BaseModel = &base
		}
		if k.session != "" {
			sid := k.session
			ev.SessionID = &sid
			se, _, _, ok := s.st.Session(sid)
			if ok && se.ProjectID != "" {
				p := se.ProjectID
				ev.ProjectID = &p
			}
			if ok {
				if se.UserMetadata != nil {
					sessions[sid] = map[string]any{"user_metadata": se.UserMetadata}
				} else {
					sessions[sid] = map[string]any{"user_metadata": nil}
				}
			}
		}
		b, _ := json.Marshal(ev)
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.Write(b[:len(b)-1])
		sb.WriteString(`,"event_info":`)
		sb.WriteString(info)
		sb.WriteByte('}')
	}
	sj, _ := json.Marshal(sessions)
	sb.WriteString(`],"sessions":`)
	sb.Write(sj)
	sb.WriteByte('}')
	writeRaw(w, 200, []byte(sb.String()))
	return nil
}
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
