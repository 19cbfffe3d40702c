package console

import (
	"fmt"
	"html"
	"net/http"
	"strings"
)

// The pages are written by Go functions rather than html/template: the
// template package's use of reflection (MethodByName) keeps every exported
// method of the binary alive and would add about 2 MB to tinker. hw keeps
// the same safety by construction: markup comes only from format strings
// written here, and every argument is HTML-escaped.

// hw builds one HTML response.
type hw struct{ strings.Builder }

// f writes format with each argument escaped (text or quoted attribute).
func (w *hw) f(format string, args ...any) {
	for i, a := range args {
		args[i] = html.EscapeString(fmt.Sprint(a))
	}
	fmt.Fprintf(w, format, args...)
}

// page is what the layout shows around a page's body.
type page struct {
	Title  string
	CSRF   string // the session's token; empty on the sign-in page
	Nav    string // which navigation entry is current
	Error  string
	Notice string
}

// csrfField is the hidden field every form carries.
func (w *hw) csrfField(token string) {
	w.f(`<input type="hidden" name="csrf" value="%v">`, token)
}

// write sends a whole page: the layout around body.
func (c *Console) write(rw http.ResponseWriter, status int, p page, body func(w *hw)) {
	var w hw
	w.top(p)
	if body != nil {
		body(&w)
	}
	w.WriteString("</main>\n</body>\n</html>\n")
	c.send(rw, status, &w)
}

// send writes a built response.
func (c *Console) send(rw http.ResponseWriter, status int, w *hw) {
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.WriteHeader(status)
	rw.Write([]byte(w.String()))
}

func (w *hw) top(p page) {
	w.f(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>%v · tinker console</title>
<link rel="stylesheet" href="/console/static/console.css">
<script src="/console/static/console.js" defer></script>
</head>
<body>
<header>
<a class="brand" href="/">tinker<span>console</span></a>
`, p.Title)
	if p.CSRF != "" {
		w.WriteString("<nav>\n")
		for _, n := range []struct{ key, href, label string }{{"runs", "/", "Runs"}, {"logs", "/console/logs", "Training logs"}, {"playground", "/console/playground", "Playground"}} {
			here := ""
			if n.key == p.Nav {
				here = ` class="here"`
			}
			w.f(`<a href="%v"`, n.href)
			w.WriteString(here)
			w.f(">%v</a>\n", n.label)
		}
		w.WriteString(`</nav>
<form method="post" action="/console/logout" class="signout">`)
		w.csrfField(p.CSRF)
		w.WriteString(`<button type="submit">Sign out</button></form>` + "\n")
	}
	w.WriteString("</header>\n<main>\n")
	if p.Error != "" {
		w.f("<p class=\"error\" role=\"alert\">%v</p>\n", p.Error)
	}
	if p.Notice != "" {
		w.f("<p class=\"notice\" role=\"status\">%v</p>\n", p.Notice)
	}
}

// signinPage is the sign-in form, and all a visitor without a session sees.
func signinPage(w *hw) {
	w.WriteString(`<section class="signin">
<h1>Sign in</h1>
<p>Use the API key you give the Tinker API. It stays on this server for the session; the page keeps only a session cookie.</p>
<form method="post" action="/console/login">
<label for="api_key">API key</label>
<input type="password" id="api_key" name="api_key" autocomplete="off" required autofocus>
<button type="submit">Sign in</button>
</form>
</section>
`)
}

func backToRuns(w *hw) { w.WriteString(`<p><a href="/">Back to the runs</a></p>` + "\n") }

// table writes a table with id, header cells and rows of escaped cells;
// columns listed in num are right-aligned.
func (w *hw) table(id string, head []string, rows [][]string, num map[int]bool) {
	w.f(`<table class="list" id="%v">`+"\n<thead><tr>", id)
	for i, h := range head {
		w.cell("th", num[i], h)
	}
	w.WriteString("</tr></thead>\n<tbody>")
	for _, r := range rows {
		w.WriteString("<tr>")
		for i, c := range r {
			w.cell("td", num[i], c)
		}
		w.WriteString("</tr>\n")
	}
	w.WriteString("</tbody>\n</table>\n")
}

// cell writes one th or td holding escaped text.
func (w *hw) cell(tag string, num bool, text string) {
	if num {
		w.f(`<%v class="num">%v</%v>`, tag, text, tag)
		return
	}
	w.f(`<%v>%v</%v>`, tag, text, tag)
}
