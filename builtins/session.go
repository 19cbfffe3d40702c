package builtins

import (
	"fmt"
	gotime "time"

	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"github.com/tinkershell/tinker/lib/tinkerapi"
	"go.starlark.net/starlark"
)

// sessionBuiltins are the builtins session.go defines (registryParts lists them).
var sessionBuiltins = []entry{
	{docEntry{
		Name:      "session.list",
		Signature: `session.list(limit=20, offset=0, access_scope="owned")`,
		Summary:   "Your session ids, newest first.",
		Example:   `session.list()[:5]`,
	}, sessionList},
	{docEntry{
		Name:      "session.info",
		Signature: "session.info(id)",
		Summary:   "A session's training runs and samplers.",
		Example:   `session.info(session.list()[0]).training_run_ids`,
	}, sessionInfo},
	{docEntry{
		Name:      "session.export_trace",
		Signature: "session.export_trace(id, output=None, url_only=False)",
		Summary:   "Export a session's Perfetto trace to OUTPUT (default ./<id>.pftrace), or just its URL.",
		Example:   `session.export_trace(session.list()[0], output="traces/last.pftrace")`,
	}, sessionExportTrace},
}

func sessionList(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	limit, offset, scope := 20, 0, "owned"
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "limit?", &limit, "offset?", &offset, "access_scope?", &scope); err != nil {
		return nil, err
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	resp, err := c.ListSessions(ContextOf(thread), limit, offset, scope)
	if err != nil {
		return nil, apiErr(err)
	}
	l := strList(resp.Sessions)
	noteListing(l, "No sessions found", 0, true)
	return l, nil
}

// Session is a session's contents as a value.
type Session struct {
	ID   string
	Info tinkerapi.GetSessionResponse
}

var (
	_ RecordValue       = (*Session)(nil)
	_ JSONValue         = (*Session)(nil)
	_ starlark.HasAttrs = (*Session)(nil)
)

func (s *Session) String() string                           { return fmt.Sprintf("<session %s>", s.ID) }
func (s *Session) Type() string                             { return "session" }
func (s *Session) Freeze()                                  {}
func (s *Session) Truth() starlark.Bool                     { return true }
func (s *Session) Hash() (uint32, error)                    { return starlark.String(s.ID).Hash() }
func (s *Session) AttrNames() []string                      { return sessionAttrs.names(s) }
func (s *Session) Attr(name string) (starlark.Value, error) { return sessionAttrs.get(s, name) }

var sessionAttrs = attrTable[*Session]{
	{name: "sampler_ids", doc: "the ids of its samplers", value: func(s *Session) starlark.Value { return strList(s.Info.SamplerIDs) }},
	{name: "session_id", doc: "its id", value: func(s *Session) starlark.Value { return starlark.String(s.ID) }},
	{name: "training_run_ids", doc: "the ids of its training runs", value: func(s *Session) starlark.Value { return strList(s.Info.TrainingRunIDs) }},
}

func (s *Session) Record(gotime.Time) *render.Record {
	r := &render.Record{Title: "Session: " + s.ID}
	r.Fields = append(r.Fields, render.Field{Name: "Session ID", Value: s.ID})
	for _, id := range s.Info.TrainingRunIDs {
		r.Fields = append(r.Fields, render.Field{Name: "Training Run", Value: id})
	}
	for _, id := range s.Info.SamplerIDs {
		r.Fields = append(r.Fields, render.Field{Name: "Sampler", Value: id})
	}
	return r
}
func (s *Session) RowColumns() []render.Column {
	return []render.Column{{Header: "Session ID", Kind: render.ID}, {Header: "Training Runs", Right: true}, {Header: "Samplers", Right: true}}
}
func (s *Session) Row(gotime.Time) []string {
	return []string{s.ID, fmt.Sprint(len(s.Info.TrainingRunIDs)), fmt.Sprint(len(s.Info.SamplerIDs))}
}
func (s *Session) ListTitle(n int) string { return ops.Plural(n, "session", "sessions") }
func (s *Session) JSON() any {
	return render.Object{{Key: "session_id", Value: s.ID}, {Key: "training_run_ids", Value: s.Info.TrainingRunIDs}, {Key: "sampler_ids", Value: s.Info.SamplerIDs}}
}
func (s *Session) MarshalJSON() ([]byte, error) { return marshalJSON(s) }

func sessionInfo(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var id string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "id", &id); err != nil {
		return nil, err
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	resp, err := c.GetSession(ContextOf(thread), id, "owned")
	if err != nil {
		return nil, apiErr(err)
	}
	return &Session{ID: id, Info: *resp}, nil
}

// TraceResult is what session.export_trace returns.
type TraceResult struct{ ops.TraceResult }

var (
	_ RecordValue = (*TraceResult)(nil)
	_ JSONValue   = (*TraceResult)(nil)
)

func (t *TraceResult) String() string                           { return fmt.Sprintf("<trace %s>", t.SessionID) }
func (t *TraceResult) Type() string                             { return "trace" }
func (t *TraceResult) Freeze()                                  {}
func (t *TraceResult) Truth() starlark.Bool                     { return true }
func (t *TraceResult) Hash() (uint32, error)                    { return starlark.String(t.SessionID).Hash() }
func (t *TraceResult) AttrNames() []string                      { return traceAttrs.names(t) }
func (t *TraceResult) Attr(name string) (starlark.Value, error) { return traceAttrs.get(t, name) }

var traceAttrs = attrTable[*TraceResult]{
	{name: "destination", doc: "the file written, or None with url_only=True", value: func(t *TraceResult) starlark.Value { return noneIfEmpty(t.Destination) }},
	{name: "file_size_bytes", doc: "the size of the file written", value: func(t *TraceResult) starlark.Value { return starlark.MakeInt64(t.Size) }},
	{name: "session_id", doc: "the session traced", value: func(t *TraceResult) starlark.Value { return starlark.String(t.SessionID) }},
	{name: "url", doc: "the signed download URL (valid for about an hour)", value: func(t *TraceResult) starlark.Value { return starlark.String(t.URL) }},
}

func (t *TraceResult) MarshalJSON() ([]byte, error) { return marshalJSON(t) }

func sessionExportTrace(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var id string
	var outV starlark.Value = starlark.None
	var urlOnly bool
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "id", &id, "output?", &outV, "url_only?", &urlOnly); err != nil {
		return nil, err
	}
	output, err := optString(outV, "output")
	if err != nil {
		return nil, err
	}
	env := envOf(thread)
	c, err := env.Client()
	if err != nil {
		return nil, err
	}
	ctx := ContextOf(thread)
	url, err := ops.TraceURL(ctx, c, id, func() {
		if env.NoticesTTY {
			fmt.Fprintf(env.Notices, "Building trace export for session: %s (this may take a while)\n", id)
		}
	})
	if err != nil {
		return nil, apiErr(err)
	}
	if urlOnly {
		return &TraceResult{ops.TraceResult{SessionID: id, URL: url}}, nil
	}
	dest, err := ops.TraceDestination(id, output)
	if err != nil {
		return nil, err
	}
	n, err := ops.SaveTrace(ctx, url, dest, nil)
	if err != nil {
		return nil, err
	}
	return &TraceResult{ops.TraceResult{SessionID: id, Destination: dest, URL: url, Size: n}}, nil
}
