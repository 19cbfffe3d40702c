package console

import (
	"bytes"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/tinkershell/tinker/lib/render"
)

// page is what every template gets: the layout's fields and the page's own
// data in Data.
type page struct {
	Title  string
	CSRF   string // the session's token, for the forms
	Nav    string // which navigation entry is current
	Error  string
	Notice string
	Data   any
}

var funcs = template.FuncMap{
	"seg": url.PathEscape,
}

// render writes template name inside the layout. It renders into a
// buffer first so a template error is a clean 500, not half a page.
func (c *Console) render(w http.ResponseWriter, status int, name string, p page) {
	var buf bytes.Buffer
	if err := c.pages.ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, "The console could not draw this page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// ago is a time as "3 minutes ago" from now.
func (c *Console) ago(t time.Time) string { return render.Ago(t, c.opts.Now()) }
