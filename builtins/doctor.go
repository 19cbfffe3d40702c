package builtins

import (
	"context"
	"errors"
	"fmt"
	"strings"
	gotime "time"

	"github.com/tinkershell/tinker/lib/doctor"
	"github.com/tinkershell/tinker/lib/ops"
	"github.com/tinkershell/tinker/lib/render"
	"go.starlark.net/starlark"
)

// doctorBuiltins are the builtins doctor.go defines (registryParts lists them).
var doctorBuiltins = []entry{
	{docEntry{
		Name:      "doctor",
		Signature: "doctor()",
		Summary:   "Check the backend: whether it answers, the credential's source, its models and endpoints, the HF cache, what to fix.",
		Details: "Every probe is a read. Endpoints another Tinker API server (such as SkyRL tx) lacks show as\n" +
			"\"not offered\"; the credential itself is never shown. .ok is True when the backend answers\n" +
			"and accepts the credential; .fixes lists what to do, one line each.",
		Example: "d = doctor()\nd.endpoints[\"health\"]",
	}, doctorFn},
}

func doctorFn(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	env := envOf(thread)
	r, err := CheckBackend(ContextOf(thread), env.Backend, doctor.Options{Now: env.Clock}, "")
	if err != nil {
		return nil, err
	}
	return &Doctor{R: r}, nil
}

// CheckBackend runs doctor's checks on b, for doctor() and tinker doctor.
// Without a credential (no backend chosen) it reports what it can and how
// to set one; baseURL is the service's address then ("" for the default).
func CheckBackend(ctx context.Context, b Backend, o doctor.Options, baseURL string) (*doctor.Report, error) {
	if b == nil {
		o.Backend = "none"
		return doctor.NoCredential(baseURL, o), nil
	}
	o.Backend = b.Name()
	c, err := b.Client()
	if errors.Is(err, ops.ErrNoBackend) {
		return doctor.NoCredential(baseURL, o), nil
	}
	if err != nil {
		return nil, err
	}
	o.Local = strings.HasPrefix(o.Backend, "local")
	return doctor.Check(ctx, c, o), nil
}

// Doctor is doctor()'s report.
type Doctor struct{ R *doctor.Report }

var (
	_ RecordValue       = (*Doctor)(nil)
	_ JSONValue         = (*Doctor)(nil)
	_ starlark.HasAttrs = (*Doctor)(nil)
)

func (d *Doctor) String() string {
	return fmt.Sprintf("<doctor %s ok=%v, %s>", d.R.BaseURL, d.R.OK(), ops.Count(len(d.R.Fixes), "fix", "fixes"))
}
func (d *Doctor) Type() string                             { return "doctor" }
func (d *Doctor) Freeze()                                  {}
func (d *Doctor) Truth() starlark.Bool                     { return starlark.Bool(d.R.OK()) }
func (d *Doctor) Hash() (uint32, error)                    { return 0, fmt.Errorf("unhashable: doctor") }
func (d *Doctor) AttrNames() []string                      { return doctorAttrs.names(d) }
func (d *Doctor) Attr(name string) (starlark.Value, error) { return doctorAttrs.get(d, name) }

var doctorAttrs = attrTable[*Doctor]{
	{name: "auth", doc: `"API key", or "JWT for <user>" when the backend exchanges keys for JWTs`, value: func(d *Doctor) starlark.Value { return starlark.String(d.R.Auth) }},
	{name: "backend", doc: "how the backend was chosen (its URL, or the local server)", value: func(d *Doctor) starlark.Value { return starlark.String(d.R.Backend) }},
	{name: "base_url", doc: "the URL requests go to", value: func(d *Doctor) starlark.Value { return starlark.String(d.R.BaseURL) }},
	{name: "credential", doc: "where the credential comes from (never the credential)", value: func(d *Doctor) starlark.Value { return starlark.String(d.R.Credential) }},
	{name: "endpoints", doc: `a dict from endpoint to "answers", "not offered", "refused the credential" or "failed"`, value: func(d *Doctor) starlark.Value {
		dict := starlark.NewDict(len(d.R.Endpoints))
		for _, e := range d.R.Endpoints {
			dict.SetKey(starlark.String(e.Name), starlark.String(e.State))
		}
		return dict
	}},
	{name: "fixes", doc: "what to do, one line each; empty when all is well", value: func(d *Doctor) starlark.Value { return strList(d.R.Fixes) }},
	{name: "hf_cache", doc: "the Hugging Face cache directory tokenizers are read from", value: func(d *Doctor) starlark.Value { return starlark.String(d.R.HFCache.Dir) }},
	{name: "models", doc: "the base models listed, those without weights marked", value: func(d *Doctor) starlark.Value { return strList(modelNames(d.R)) }},
	{name: "ok", doc: "whether the backend answers and accepts the credential", value: func(d *Doctor) starlark.Value { return starlark.Bool(d.R.OK()) }},
}

// modelNames lists the models, marking those whose weights are absent.
func modelNames(r *doctor.Report) []string {
	var out []string
	for _, m := range r.Models {
		name := m.ModelName
		if m.Servable != nil && !*m.Servable {
			name += " (weights absent)"
		}
		out = append(out, name)
	}
	return out
}

// modelsText lists the models, or when the backend marks which can run
// now (tinker serve lists its whole catalog), counts them and names those.
func modelsText(r *doctor.Report) string {
	var now []string
	marked := false
	for _, m := range r.Models {
		marked = marked || m.Servable != nil
		if m.Servable == nil || *m.Servable {
			now = append(now, m.ModelName)
		}
	}
	if !marked {
		return strings.Join(now, ", ")
	}
	s := fmt.Sprintf("%d listed; servable now: %s", len(r.Models), strings.Join(now, ", "))
	if len(now) < len(r.Models) && len(now) > 0 {
		s += "; the others need their weights (`hf download NAME`, or `tinker serve --model NAME=DIR`)"
	}
	return s
}

// endpointText is how one endpoint answered, e.g. "not offered (404)".
func endpointText(e doctor.Endpoint) string {
	switch {
	case e.State == doctor.StateFailed:
		return "failed: " + e.Err
	case e.State == doctor.StateAnswers && e.Status >= 400:
		// The probe names a made-up id: a refusal of it shows the
		// endpoint is there.
		return fmt.Sprintf("offered (%d for the probe's made-up id, as expected)", e.Status)
	case e.Status != 0:
		return fmt.Sprintf("%s (%d)", e.State, e.Status)
	}
	return e.State
}

func (d *Doctor) hfText() string {
	h := d.R.HFCache
	s := h.Dir + " (absent)"
	if h.Exists {
		s = fmt.Sprintf("%s (%s)", h.Dir, ops.Count(h.Repos, "repo", "repos"))
	}
	if h.Offline {
		return s + ", offline"
	}
	return s + ", downloads from " + h.Endpoint
}

func (d *Doctor) Record(gotime.Time) *render.Record {
	r := d.R
	ok := "yes"
	if !r.OK() {
		ok = "no"
	}
	f := []render.Field{{Name: "Backend", Value: r.Backend}, {Name: "Base URL", Value: r.BaseURL},
		{Name: "Credential", Value: r.Credential}, {Name: "Auth", Value: r.Auth}, {Name: "Usable", Value: ok}}
	if r.Config != "" {
		f = append(f, render.Field{Name: "Config", Value: r.Config})
	}
	if r.Local != "" {
		f = append(f, render.Field{Name: "Local server", Value: r.Local})
	}
	if len(r.Models) > 0 {
		f = append(f, render.Field{Name: "Models", Value: modelsText(r)})
	}
	for _, e := range r.Endpoints {
		f = append(f, render.Field{Name: "Endpoint " + e.Name, Value: endpointText(e)})
	}
	f = append(f, render.Field{Name: "HF cache", Value: d.hfText()})
	for _, fix := range r.Fixes {
		f = append(f, render.Field{Name: "To fix", Value: fix})
	}
	// Findings are sentences: piped, they wrap at 100 columns too.
	return &render.Record{Title: "Backend check", Fields: f, PipedWidth: 100}
}

func (d *Doctor) RowColumns() []render.Column {
	return []render.Column{{Header: "Base URL"}, {Header: "Usable"}, {Header: "Fixes", Right: true}}
}
func (d *Doctor) Row(now gotime.Time) []string {
	return []string{d.R.BaseURL, fmt.Sprint(d.R.OK()), fmt.Sprint(len(d.R.Fixes))}
}
func (d *Doctor) ListTitle(n int) string       { return ops.Plural(n, "backend check", "backend checks") }
func (d *Doctor) MarshalJSON() ([]byte, error) { return marshalJSON(d) }

func (d *Doctor) JSON() any {
	r := d.R
	eps := render.Object{}
	for _, e := range r.Endpoints {
		o := render.Object{{Key: "method", Value: e.Method}, {Key: "path", Value: e.Path}, {Key: "status", Value: e.Status}, {Key: "state", Value: e.State}}
		if e.Err != "" {
			o = append(o, render.Member{Key: "error", Value: e.Err})
		}
		eps = append(eps, render.Member{Key: e.Name, Value: o})
	}
	models := make([]any, len(r.Models))
	for i, m := range r.Models {
		var servable any // null: the backend does not say
		if m.Servable != nil {
			servable = *m.Servable
		}
		models[i] = render.Object{{Key: "model_name", Value: m.ModelName}, {Key: "servable", Value: servable}}
	}
	fixes := append([]string{}, r.Fixes...)
	return render.Object{{Key: "ok", Value: r.OK()}, {Key: "backend", Value: r.Backend}, {Key: "base_url", Value: r.BaseURL},
		{Key: "credential", Value: r.Credential}, {Key: "auth", Value: r.Auth}, {Key: "models", Value: models},
		{Key: "endpoints", Value: eps}, {Key: "hf_cache", Value: render.Object{{Key: "dir", Value: r.HFCache.Dir},
			{Key: "exists", Value: r.HFCache.Exists}, {Key: "repos", Value: r.HFCache.Repos}, {Key: "endpoint", Value: r.HFCache.Endpoint},
			{Key: "offline", Value: r.HFCache.Offline}}}, {Key: "fixes", Value: fixes}}
}
