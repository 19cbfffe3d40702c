// Package console is tinker's web console: runs, checkpoints, live
// training curves, a log_dir's metrics.jsonl and a sample playground,
// served beside the API by `tinker serve` and on its own by `tinker
// console` against any backend.
//
// The pages are rendered on the server with html/template from a small
// embedded bundle (assets/: templates, one stylesheet, one script); charts
// are SVG drawn here, and the script only refreshes them while training
// runs. There is no CDN and no build step; the templates are the only
// thing parsed when the console is created.
//
// The console is a client of the Tinker API: each signed-in user's key is
// held here, server-side, and every call is made with it, so the API's own
// rules (who owns what, what may be published or deleted) apply unchanged
// and other users' runs stay invisible. Training curves come from the
// local server's training events (server.Options.OnTrain) and from log
// directories named when the console starts.
//
// Security, all in security.go and session.go: loopback clients and hosts
// only (unless AllowRemote), sign-in by a form posting api_key to
// /console/login, answered with an HttpOnly SameSite=Strict session
// cookie (the key never reaches the browser again), a CSRF token and a
// same-origin check on every POST, and a strict Content-Security-Policy on
// every response.
package console
