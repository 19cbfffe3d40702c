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
func parseBillingTime(name, v string) (time.Time, *errorResponse) {
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

// billingUsage answers GET billing/usage/events: the owner's metered
// usage in hourly buckets per session, base model and kind. See
// docs/protocol.md, "Billing".
func (s *Server) billingUsage(w http.ResponseWriter, r *http.Request, owner string, _ []string) *errorResponse {
	from, to, e := billingWindow(r)
	if e != nil {
		return e
	}
	usage, err := s.st.Usage(owner, from, to)
	if err != nil {
		return storeFailure("billing", err)
	}
	sums := billingSums{}
	for _, u := range usage {
		sums.get(billingKey{u.At.Truncate(time.Hour), u.SessionID, u.BaseModel, u.Type, u.Cached}).tokens += u.TokenCount
	}
	s.addCheckpointUsage(sums, owner, from, to)
	writeRaw(w, 200, s.billingJSON(owner, sums))
	return nil
}

// billingWindow reads starting_on and ending_before: whole hours, at most
// 14 days apart.
func billingWindow(r *http.Request) (from, to time.Time, e *errorResponse) {
	q := r.URL.Query()
	if from, e = parseBillingTime("starting_on", q.Get("starting_on")); e != nil {
		return
	}
	if to, e = parseBillingTime("ending_before", q.Get("ending_before")); e != nil {
		return
	}
	switch {
	case !from.Equal(from.Truncate(time.Hour)) || !to.Equal(to.Truncate(time.Hour)):
		e = errorf(http.StatusBadRequest, "starting_on and ending_before must be aligned to the hour (e.g. 2026-07-13T05:00:00Z)")
	case !to.After(from):
		e = errorf(http.StatusBadRequest, "ending_before must be after starting_on")
	case to.Sub(from) > 14*24*time.Hour:
		e = errorf(http.StatusBadRequest, "the window may span at most 14 days")
	}
	return
}

// billingKey is one billing event: an hour, a session, a base model and a
// kind of usage.
type billingKey struct {
	bucket              time.Time
	session, base, kind string
	cached              bool
}

type billingAgg struct {
	tokens, count int64
	gbh           float64
}

type billingSums map[billingKey]*billingAgg

func (m billingSums) get(k billingKey) *billingAgg {
	a := m[k]
	if a == nil {
		a = &billingAgg{}
		m[k] = a
	}
	return a
}

// addCheckpointUsage counts checkpoints saved in the window and the
// gigabyte-hours each one was stored for during each hour of the window,
// up to now or its expiry.
func (s *Server) addCheckpointUsage(sums billingSums, owner string, from, to time.Time) {
	runs := map[string]store.RunView{}
	now := s.now()
	for _, c := range s.st.OwnerCheckpoints(owner) {
		rv, ok := runs[c.RunID]
		if !ok {
			rv, _ = s.st.Run(c.RunID, now)
			runs[c.RunID] = rv
		}
		if !c.Time.Before(from) && c.Time.Before(to) {
			sums.get(billingKey{c.Time.Truncate(time.Hour), rv.SessionID, rv.BaseModel, "checkpoint", false}).count++
		}
		end := now
		if c.ExpiresAt != nil && c.ExpiresAt.Before(end) {
			end = *c.ExpiresAt
		}
		for b := from; b.Before(to); b = b.Add(time.Hour) {
			lo, hi := maxTime(b, c.Time), minTime(b.Add(time.Hour), end)
			if hi.After(lo) {
				sums.get(billingKey{b, rv.SessionID, rv.BaseModel, "storage", false}).gbh += float64(c.SizeBytes) / 1e9 * hi.Sub(lo).Hours()
			}
		}
	}
}

// billingKindRank orders the kinds of usage in a report (a switch: a
// package-level map is built at every start).
func billingKindRank(kind string) int {
	switch kind {
	case "sampling_prefill":
		return 1
	case "sampling_sample":
		return 2
	case "checkpoint":
		return 3
	case "storage":
		return 4
	}
	return 0 // training, and any other
}

// sortedKeys orders events by hour, session, base model, then kind.
func (m billingSums) sortedKeys() []billingKey {
	keys := make([]billingKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
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
			return billingKindRank(a.kind) < billingKindRank(b.kind)
		}
		return !a.cached && b.cached
	})
	return keys
}

// eventInfo is an event's event_info object, whose fields depend on its kind.
func eventInfo(k billingKey, a *billingAgg) string {
	switch k.kind {
	case "training", "sampling_sample":
		return fmt.Sprintf(`{"type":%q,"token_count":%d}`, k.kind, a.tokens)
	case "sampling_prefill":
		return fmt.Sprintf(`{"type":"sampling_prefill","cached":%t,"token_count":%d}`, k.cached, a.tokens)
	case "checkpoint":
		return fmt.Sprintf(`{"type":"checkpoint","count":%d}`, a.count)
	case "storage":
		gb, _ := json.Marshal(a.gbh)
		return `{"type":"storage","gigabyte_hours":` + string(gb) + `}`
	}
	return ""
}

// billingJSON is the response body: the events in order, and the metadata
// of each session they name.
func (s *Server) billingJSON(owner string, sums billingSums) []byte {
	var sb strings.Builder
	sb.WriteString(`{"data":[`)
	sessions := map[string]any{}
	for i, k := range sums.sortedKeys() {
		ev := billingEvent{BucketStart: ts(k.bucket), BucketEnd: ts(k.bucket.Add(time.Hour)), UserID: &owner}
		if k.base != "" {
			base := k.base
			ev.BaseModel = &base
		}
		if k.session != "" {
			sid := k.session
			ev.SessionID = &sid
			if se, _, _, ok := s.st.Session(sid); ok {
				if se.ProjectID != "" {
					p := se.ProjectID
					ev.ProjectID = &p
				}
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
		sb.Write(b[:len(b)-1]) // the event's fields, then event_info
		sb.WriteString(`,"event_info":`)
		sb.WriteString(eventInfo(k, sums[k]))
		sb.WriteByte('}')
	}
	sj, _ := json.Marshal(sessions)
	sb.WriteString(`],"sessions":`)
	sb.Write(sj)
	sb.WriteByte('}')
	return []byte(sb.String())
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
