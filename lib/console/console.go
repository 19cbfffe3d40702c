package console

import (
	"embed"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// Options configures a Console.
type Options struct {
	// BaseURL is the Tinker API the console calls with each user's key.
	BaseURL string
	// HTTPClient, when set, carries those calls (tests; default transport otherwise).
	HTTPClient *http.Client
	// LogDirs are log directories (or folders of them) whose
	// metrics.jsonl the console shows to every signed-in user.
	LogDirs []string
	// AllowRemote serves clients that are not on loopback too; by
	// default the console answers only loopback clients and hosts.
	AllowRemote bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Console serves the web console. Create it with New.
type Console struct {
	opts     Options
	static   http.Handler
	sessions *sessions
	curves   *Curves
}

// New returns a console; it does no work until the first request.
func New(o Options) (*Console, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	files, _ := fs.Sub(static, "static")
	c := &Console{opts: o, static: http.StripPrefix("/console/static/", http.FileServerFS(files)), curves: NewCurves()}
	c.sessions = newSessions(c)
	return c, nil
}

// Curves is where the console keeps training curves; feed it the local
// server's events with OnTrain.
func (c *Console) Curves() *Curves { return c.curves }

// Wrap serves the console's paths ("/" and "/console/…") and passes
// every other request to api unchanged.
func (c *Console) Wrap(api http.Handler) http.Handler {
	own := c.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsConsolePath(r.URL.Path) {
			own.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// IsConsolePath reports whether path belongs to the console.
func IsConsolePath(path string) bool {
	return path == "/" || path == "/console" || strings.HasPrefix(path, "/console/")
}

// Handler serves the console's paths only.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", c.signedIn(c.runsPage))
	mux.HandleFunc("GET /console/{$}", c.signedIn(c.runsPage))
	mux.HandleFunc("GET /console/runs-table", c.signedIn(c.runsTable))
	mux.HandleFunc("POST /console/login", c.login)
	mux.HandleFunc("POST /console/logout", c.changes(c.logout))
	mux.HandleFunc("GET /console/runs/{run}", c.signedIn(c.runPage))
	mux.HandleFunc("GET /console/runs/{run}/charts", c.signedIn(c.runCharts))
	mux.HandleFunc("GET /console/runs/{run}/checkpoints/{kind}/{name}/download", c.signedIn(c.download))
	mux.HandleFunc("GET /console/runs/{run}/checkpoints/{kind}/{name}/delete", c.signedIn(c.confirmDelete))
	mux.HandleFunc("POST /console/runs/{run}/checkpoints/{kind}/{name}/{action}", c.changes(c.checkpointAction))
	mux.HandleFunc("GET /console/logs", c.signedIn(c.logsPage))
	mux.HandleFunc("GET /console/logs/{i}", c.signedIn(c.logPage))
	mux.HandleFunc("GET /console/logs/{i}/charts", c.signedIn(c.logCharts))
	mux.HandleFunc("GET /console/playground", c.signedIn(c.playgroundPage))
	mux.HandleFunc("POST /console/playground", c.changes(c.playgroundSample))
	mux.Handle("GET /console/static/", c.static)
	return c.guard(mux)
}

// LoopbackURL is the URL of a listener bound to addr as seen from this
// machine: an unspecified host (0.0.0.0, ::) becomes 127.0.0.1.
func LoopbackURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
